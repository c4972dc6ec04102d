import FastpullFixtures
import Foundation
import Testing

/// A link shaped per connection gives every live connection a class of its own: the classes are picked
/// by the client port's low byte, and the namespace's clients take their ports from 256 in a row. The
/// kernel otherwise spreads client ports over some 28,000, mostly even, and 64 connections fell into
/// about 50 low bytes: a dozen shared a class, two connections at one connection's rate.
@Suite(
    "Shaped links",
    .enabled(if: NetworkNamespace.unavailableReason == nil, "needs root and iproute2")
)
struct ShapedLinkTests {
    /// Opens 64 connections inside a namespace shaped per connection and reads their client ports.
    @Test func sixtyFourConnectionsGetSixtyFourClasses() async throws {
        let namespace = try await NetworkNamespace.create()
        do {
            try await namespace.capEachConnection(fromPort: 8080, rate: "40mbit")
            let ports = try clientPorts(count: 64, in: namespace)
            let first = NetworkNamespace.firstClientPort
            #expect(ports.count == 64)
            #expect(ports.allSatisfy { (first..<first + 256).contains($0) }, "\(ports.sorted())")
            #expect(Set(ports.map { $0 & 0xff }).count == 64, "\(ports.sorted())")
        } catch {
            await namespace.remove()
            throw error
        }
        await namespace.remove()
    }

    /// The client ports of `count` connections to a listener, all open at once, made by Python inside
    /// the namespace.
    func clientPorts(count: Int, in namespace: NetworkNamespace) throws -> [Int] {
        let script = """
            import socket
            listener = socket.socket()
            listener.bind(("127.0.0.1", 0))
            listener.listen(\(count))
            clients = [socket.create_connection(listener.getsockname()) for _ in range(\(count))]
            print(" ".join(str(c.getsockname()[1]) for c in clients))
            """
        let (executable, arguments) = namespace.command("/usr/bin/env", ["python3", "-c", script])
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return String(decoding: data, as: UTF8.self).split(separator: " ").compactMap {
            Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }
}
