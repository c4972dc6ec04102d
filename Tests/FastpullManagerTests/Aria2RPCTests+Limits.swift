import FastpullFixtures
import Foundation
import Testing

@testable import FastpullManager

#if canImport(Glibc)
    import Glibc
#endif

/// What bounds a caller: the size of a request, and the time a wrong secret costs.
extension Aria2RPCTests {
    /// A request that says it is larger than the daemon reads is answered 413 at once and closed, its
    /// body never read; one whose head never ends is answered 431. The daemon answers the next one.
    @Test func oversizedRequestsAreCut() async throws {
        try await withDaemon {
            let body = await Self.exchange(
                port: daemon.port,
                "POST /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(RPCHTTPServer.largestBody + 1)\r\n\r\n"
            )
            #expect(body.hasPrefix("HTTP/1.1 413 "), "\(body)")
            let head = await Self.exchange(
                port: daemon.port,
                "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: \(String(repeating: "a", count: 70_000))\r\n")
            #expect(head.hasPrefix("HTTP/1.1 431 "), "\(head)")
            let chunked = await Self.exchange(
                port: daemon.port,
                "POST /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
            #expect(chunked.hasPrefix("HTTP/1.1 411 "), "\(chunked)")
            let version = try await call("aria2.getVersion")
            #expect(version?["result"]?["version"]?.string == "1.36.0")
        }
    }

    /// A wrong secret is answered only after ``Aria2RPC/refusalDelay``, over HTTP and over XML-RPC:
    /// guessing costs time on a timer, not the daemon's CPU.
    @Test func aWrongSecretIsAnsweredLate() async throws {
        try await withDaemon(secret: "right") {
            let started = ContinuousClock.now
            let refused = try await call("aria2.getVersion", #"["token:wrong"]"#)
            #expect(refused?["error"]?["message"]?.string == "Unauthorized")
            #expect(ContinuousClock.now - started >= Aria2RPC.refusalDelay)
            let xml = try await LoopbackHTTPClient(port: daemon.port).send(
                .init(
                    method: "POST", target: "/rpc",
                    body: Data(
                        "<methodCall><methodName>aria2.getVersion</methodName><params><param><value>token:no</value></param></params></methodCall>"
                            .utf8)))
            #expect(xml.text.contains("Unauthorized"))
            #expect(ContinuousClock.now - started >= Aria2RPC.refusalDelay * 2)
        }
    }

    /// Connections that send nothing cannot lock anyone out of the RPC: with every place taken by
    /// idle connections, and then by idle WebSockets, a new caller is answered, and the one that has
    /// waited longest (and only that one) gave its place up. A WebSocket's wait is counted from the
    /// last frame its client sent: the first one opened, having just sent a ping, keeps its place and
    /// the second one opened gives its up.
    @Test func idleConnectionsCannotLockTheRPCOut() async throws {
        try await withDaemon {
            let handshake =
                "GET /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
            for upgraded in [false, true] {
                // The places the round before took are free again (their sockets closed).
                #expect(try await waitFor { self.daemon.rpcConnections == 0 })
                var idle: [Int32] = []
                defer { for fd in idle { close(fd) } }
                for _ in 0..<RPCHTTPServer.mostConnections {
                    let fd = try #require(Self.connected(port: daemon.port))
                    idle.append(fd)
                    // Each WebSocket is open (its 101 read) before the next, so the first is the oldest.
                    if upgraded {
                        #expect(Self.sendAll(fd, handshake))
                        #expect(Self.readHead(fd).hasPrefix("HTTP/1.1 101 "))
                    }
                }
                // Every one of them has its place (a connection the kernel completed can still wait
                // in the listen queue while the daemon is slow to accept: the call would then find a
                // free place and evict nobody).
                #expect(try await waitFor { self.daemon.rpcConnections == RPCHTTPServer.mostConnections })
                if upgraded {
                    // A masked ping with no payload; its pong says the daemon has read it.
                    let ping: [UInt8] = [0x89, 0x80, 1, 2, 3, 4]
                    #expect(ping.withUnsafeBytes { send(idle[0], $0.baseAddress, $0.count, 0) } == ping.count)
                    var pong: [UInt8] = [0, 0]
                    #expect(
                        pong.withUnsafeMutableBytes { recv(idle[0], $0.baseAddress, 2, Int32(MSG_WAITALL)) }
                            == 2)
                    #expect(pong == [0x8A, 0x00])
                }
                let version = try await call("aria2.getVersion")
                #expect(version?["result"]?["version"]?.string == "1.36.0", "upgraded: \(upgraded)")
                let (evicted, kept) = upgraded ? (idle[1], idle[0]) : (idle[0], idle[1])
                #expect(Self.hasEnded(evicted), "upgraded: \(upgraded)")
                #expect(!Self.hasEnded(kept, waiting: false), "upgraded: \(upgraded)")
                #expect(!Self.hasEnded(idle[2], waiting: false), "upgraded: \(upgraded)")
            }
        }
    }

    /// A connected socket to the daemon, or nil.
    private static func connected(port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close(fd)
            return nil
        }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    private static func sendAll(_ fd: Int32, _ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            == bytes.count
    }

    /// The answer's head, read a byte at a time so nothing past it is taken.
    private static func readHead(_ fd: Int32) -> String {
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.reversed().starts(with: [10, 13, 10, 13]), recv(fd, &byte, 1, 0) == 1 {
            head.append(byte)
        }
        return String(decoding: head, as: UTF8.self)
    }

    /// Whether the daemon closed `fd` (read to its end, within the socket's timeout when `waiting`).
    private static func hasEnded(_ fd: Int32, waiting: Bool = true) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes {
                recv(fd, $0.baseAddress, $0.count, waiting ? 0 : Int32(MSG_DONTWAIT))
            }
            if count == 0 { return true }
            if count < 0 { return errno == ECONNRESET }
        }
    }

    /// Writes `request` to the daemon and reads its answer until it closes, on a thread of its own.
    static func exchange(port: Int, _ request: String) async -> String {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: blockingExchange(port: port, request)) }.start()
        }
    }

    private static func blockingExchange(port: Int, _ request: String) -> String {
        guard let fd = connected(port: port) else { return "connect failed" }
        defer { close(fd) }
        let bytes = Array(request.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes {
                send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL))
            }
            // The server may answer and close before it has read everything: what it said is read below.
            guard count > 0 else { break }
            sent += count
        }
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            answer += chunk[..<count]
        }
        return String(decoding: answer, as: UTF8.self)
    }
}
