import FastpullFixtures
import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP
@testable import FastpullNet

/// The receive low-water mark (`SO_RCVLOWAT`) a body read sets so that a trickling link wakes its
/// reader per some tens of KiB, not per few packets; and that it never outlives the body.
@Suite("Receive low-water mark")
struct LowWaterTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var remaining: Int64
        var received: Int64
        var elapsed: Duration
        var expected: Int
        var testDescription: String { "\(received) B in \(elapsed), \(remaining) B left: \(expected)" }
    }

    static let cases: [Case] = [
        // No rate yet: every byte wakes the read.
        Case(remaining: 10 << 20, received: 100 << 10, elapsed: .milliseconds(10), expected: 1),
        // 12.5 MB/s: 10 ms is 125 kB, held to 64 KiB.
        Case(remaining: 10 << 20, received: 1_250_000, elapsed: .milliseconds(100), expected: 64 << 10),
        // 3 MB/s: 30 kB, in 16 KiB steps.
        Case(remaining: 10 << 20, received: 300_000, elapsed: .milliseconds(100), expected: 16 << 10),
        // 1 MB/s: 10 kB is less than a step, but 40 ms bring one (64 connections sharing a 50 MB/s
        // link woke for every packet or two).
        Case(remaining: 10 << 20, received: 1_000_000, elapsed: .seconds(1), expected: 16 << 10),
        // 400 kB/s: 40 ms bring just under a step: every byte. 420 kB/s: a step.
        Case(remaining: 10 << 20, received: 400_000, elapsed: .seconds(1), expected: 1),
        Case(remaining: 10 << 20, received: 420_000, elapsed: .seconds(1), expected: 16 << 10),
        // Never more than is still to come.
        Case(remaining: 40 << 10, received: 8 << 20, elapsed: .milliseconds(100), expected: 32 << 10),
        Case(remaining: 10 << 10, received: 8 << 20, elapsed: .milliseconds(100), expected: 1),
    ]

    @Test(arguments: cases)
    func followsTheRateAndTheRest(_ example: Case) {
        #expect(
            HTTPConnection.lowWater(
                remaining: example.remaining, received: example.received, elapsed: example.elapsed)
                == example.expected)
    }

    /// A body at 8 MB/s is read with a mark above one byte and at most 64 KiB, and every byte arrives;
    /// the next answer's head on the same connection is read with the mark back at one byte (a mark
    /// left from the body would hold the head until the read timed out).
    @Test func aBodyRaisesItAndTheNextHeadLowersIt() throws {
        let server = try FixtureServer()
        let size = 4 << 20
        let url = server.url("/gen/\(size)?seed=9&rate=8000000")
        let origin = try #require(Origin(url))
        let pool = ConnectionPool(tlsOptions: TLSOptions(), timeouts: Timeouts())
        defer { pool.closeAll() }
        let connection = try pool.connection(to: origin)
        let socket = try #require(connection.transport as? Socket)
        func get() throws -> ResponseHead {
            var headers = HTTPHeaders()
            headers.add(name: "Host", value: "127.0.0.1:\(server.port)")
            try connection.send(
                RequestHead(method: "GET", target: "/gen/\(size)?seed=9&rate=8000000", headers: headers))
            return try connection.readHead()
        }
        let head = try get()
        #expect(head.status == 200)
        var received = Data()
        var marks: [Int] = []
        try connection.readBody(of: head, method: "GET") { bytes in
            received.append(contentsOf: bytes)
            if received.count > 1 << 20, let mark = socket.receiveLowWater { marks.append(mark) }
        }
        #expect(received == Data(FixtureContent.bytes(count: size, seed: 9)))
        #expect(marks.contains { $0 > 1 && $0 <= 64 << 10 }, "\(Set(marks))")
        let second = try get()
        #expect(second.status == 200)
        #expect(connection.lowWater == 1)
        #expect(socket.receiveLowWater == 1)
        connection.discardBody(of: second, method: "GET", limit: 0)
    }

    /// Over TLS the mark stays at one byte: OpenSSL reads ahead, so the socket may hold less of a body
    /// than is still to come, and a mark sized from the rest held a window's last read until the stall
    /// timeout (10 s a run against nginx).
    @Test func tlsLeavesItAtOneByte() throws {
        var configuration = FixtureServer.Configuration()
        configuration.tls = true
        let server = try FixtureServer(configuration)
        let size = 4 << 20
        let url = server.url("/gen/\(size)?seed=11&rate=8000000")
        let origin = try #require(Origin(url))
        var options = TLSOptions()
        options.caFile = FixturePaths.certificatesDirectory + "/ca.pem"
        let pool = ConnectionPool(tlsOptions: options, timeouts: Timeouts())
        defer { pool.closeAll() }
        let connection = try pool.connection(to: origin)
        let tls = try #require(connection.transport as? TLSTransport)
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "localhost:\(server.port)")
        try connection.send(
            RequestHead(method: "GET", target: "/gen/\(size)?seed=11&rate=8000000", headers: headers))
        let head = try connection.readHead()
        var received = 0
        var marks: Set<Int> = []
        try connection.readBody(of: head, method: "GET") { bytes in
            received += bytes.count
            if received > 1 << 20, let mark = tls.receiveLowWater { marks.insert(mark) }
        }
        #expect(received == size)
        #expect(marks == [1])
    }

    /// A peer that sends less than the mark and then waits for an answer (a kernel that stopped
    /// taking bytes short of the mark looks the same to the reader): the read takes what came after
    /// the patience, with the mark put back afterwards, instead of waiting for the idle timeout
    /// (30 s here) with ordered output stalled behind it.
    @Test func aReadTakesWhatCameWhenTheMarkDoesNotCome() throws {
        let (listener, port) = try LoopbackListener.open()
        defer { close(listener) }
        let peer = Thread {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            defer { close(fd) }
            let chunk = [UInt8](repeating: 7, count: 1000)
            var answer = [UInt8](repeating: 0, count: 2)
            for _ in 0..<2 {
                guard send(fd, chunk, chunk.count, Int32(MSG_NOSIGNAL)) == chunk.count,
                    recv(fd, &answer, answer.count, Int32(MSG_WAITALL)) == answer.count
                else { return }
            }
        }
        peer.start()
        let address = try #require(try Resolver.resolve(host: "127.0.0.1", port: port).first)
        let socket = try Socket.connect(to: address, host: "127.0.0.1", port: port, timeout: .seconds(5))
        defer { socket.close() }
        try socket.setIdleTimeout(.seconds(30))
        socket.setReceiveLowWater(64 << 10)
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        for round in 1...2 {
            var received = 0
            while received < 1000 {
                received += try buffer.withUnsafeMutableBytes { try socket.read(into: $0) }
            }
            #expect(received == 1000)
            #expect(socket.impatientReads >= round)
            #expect(socket.receiveLowWater == 64 << 10)
            try [UInt8]("ok".utf8).withUnsafeBytes { try socket.write($0) }
        }
    }
}
