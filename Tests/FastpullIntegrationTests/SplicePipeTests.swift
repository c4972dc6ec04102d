import FastpullFixtures
import Foundation
import Glibc
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullNet

/// The socket → pipe → file path of plain-HTTP bodies, on a real loopback TCP connection.
@Suite("Splice pipe")
struct SplicePipeTests {
    let folder = TemporaryFolder()

    /// A connected client transport and the server's end of it, with `bytes` already sent.
    func connection(sending bytes: [UInt8]) throws -> (client: any Transport, server: Int32) {
        let (listener, port) = try LoopbackListener.open()
        defer { close(listener) }
        let client = try Connector.connect(host: "127.0.0.1", port: port, tls: nil, timeouts: Timeouts())
        let server = accept(listener, nil, nil)
        try #require(server >= 0)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(server, $0.baseAddress, $0.count, 0) }
            try #require(count > 0)
            sent += count
        }
        return (client, server)
    }

    @Test func movesBodyBytesIntoTheFileAtTheirOffset() throws {
        let body = FixtureContent.bytes(count: 3 << 20, seed: 9)
        let (client, server) = try connection(sending: body)
        defer { close(server) }
        let file = try OutputFile(creatingAt: folder.url("s.part").path)
        let pipe = try #require(SplicePipe())
        #expect(pipe.canSplice(from: client))
        var offset: Int64 = 1000
        while offset < 1000 + Int64(body.count) {
            let (received, written) = try pipe.land(
                from: client, upTo: Int(1000 + Int64(body.count) - offset), claim: { $0 }, into: file,
                at: offset)
            #expect(received > 0 && written == received)
            offset += Int64(written)
        }
        var back = [UInt8](repeating: 0, count: body.count)
        let read = try back.withUnsafeMutableBytes { try file.read(into: $0, at: 1000) }
        #expect(read == body.count)
        #expect(back == body)
    }

    /// A claim that allows fewer bytes than arrived (a steal moved the end): only those reach the
    /// file, the rest is dropped, and the pipe is empty for the next body.
    @Test func bytesBeyondTheClaimNeverReachTheFile() throws {
        let body = FixtureContent.bytes(count: 200_000, seed: 10)
        let (client, server) = try connection(sending: body)
        defer { close(server) }
        let file = try OutputFile(creatingAt: folder.url("c.part").path)
        try file.truncate(to: 300_000)
        let pipe = try #require(SplicePipe())
        let (received, written) = try pipe.land(
            from: client, upTo: 150_000, claim: { min($0, 100) }, into: file, at: 0)
        #expect(received >= 100)
        #expect(written == 100)
        var back = [UInt8](repeating: 0xFF, count: 300)
        _ = try back.withUnsafeMutableBytes { try file.read(into: $0, at: 0) }
        #expect(Array(back[0..<100]) == Array(body[0..<100]))
        #expect(back[100..<300].allSatisfy { $0 == 0 })
        // The next land starts with the bytes after what was received, not with leftovers.
        let (next, _) = try pipe.land(from: client, upTo: body.count, claim: { $0 }, into: file, at: 1000)
        #expect(next > 0)
        var again = [UInt8](repeating: 0, count: next)
        _ = try again.withUnsafeMutableBytes { try file.read(into: $0, at: 1000) }
        #expect(again == Array(body[received..<received + next]))
    }

    @Test func endOfStreamReceivesNothing() throws {
        let (client, server) = try connection(sending: [])
        close(server)
        let file = try OutputFile(creatingAt: folder.url("e.part").path)
        let pipe = try #require(SplicePipe())
        let (received, written) = try pipe.land(from: client, upTo: 10, claim: { $0 }, into: file, at: 0)
        #expect(received == 0 && written == 0)
    }
}
