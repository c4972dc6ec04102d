import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP relay on 127.0.0.1 that forwards every connection to an upstream port and records the bytes
/// clients send, so a test can check what a server received on the wire: for a proxy, that
/// `Proxy-Authorization` arrived and that the origin's credentials did not (they travel inside the TLS
/// tunnel). Put it between the client and the server: the client connects to ``port``.
///
/// Each connection is pumped by two threads of its own with blocking sockets; ``stop()`` shuts every
/// socket down, which ends them.
public final class RecordingRelay: Sendable {
    private struct State {
        var sent = Data()
        var received: Int64 = 0
        var connections = 0
        var descriptors: Set<Int32> = []
        /// Pump threads still running per relayed connection, by the client's descriptor.
        var pumpsRunning: [Int32: Int] = [:]
        var stopped = false
    }

    /// The port clients connect to.
    public let port: Int
    /// The port connections are forwarded to.
    public let upstreamPort: Int
    private let listener: Int32
    private let state = Mutex(State())
    /// At most this many client bytes are kept (the request heads come first; TLS records after them).
    private static let recordLimit = 16 << 20

    /// Starts relaying from a new port on 127.0.0.1 to 127.0.0.1:`upstreamPort`.
    public init(upstreamPort: Int) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else {
            throw RealServerError("relay socket: \(String(cString: strerror(errno)))")
        }
        var address = LoopbackPort.loopbackAddress(port: 0)
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0, listen(descriptor, 64) == 0 else {
            let message = String(cString: strerror(errno))
            close(descriptor)
            throw RealServerError("relay bind/listen: \(message)")
        }
        var actual = sockaddr_in()
        var actualLength = length
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getsockname(descriptor, $0, &actualLength)
            }
        }
        listener = descriptor
        port = Int(UInt16(bigEndian: actual.sin_port))
        self.upstreamPort = upstreamPort
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "relay :\(port)"
        thread.start()
    }

    /// Every byte clients sent so far (up to 16 MiB), all connections in the order they arrived.
    public var clientBytes: Data { state.withLock { $0.sent } }

    /// ``clientBytes`` as text (TLS records come out as noise; request heads as they were sent).
    public var clientText: String { String(decoding: clientBytes, as: UTF8.self) }

    /// How many bytes the upstream server sent clients through the relay (what it served, for a server
    /// whose log has no byte counts).
    public var upstreamByteCount: Int64 { state.withLock { $0.received } }

    /// How many client connections the relay accepted.
    public var connectionCount: Int { state.withLock { $0.connections } }

    /// Stops accepting and closes every relayed connection.
    public func stop() {
        // Under the lock: a descriptor leaves the set (under the lock) before it is closed, so none of
        // these can have been closed and reused for another socket meanwhile.
        state.withLock { state in
            state.stopped = true
            for descriptor in state.descriptors { shutdown(descriptor, Int32(SHUT_RDWR)) }
        }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit {
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = LoopbackPort.loopbackAddress(port: upstreamPort)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            let accepted = state.withLock { state -> Bool in
                guard !state.stopped, connected == 0 else { return false }
                state.connections += 1
                state.descriptors.formUnion([client, upstream])
                state.pumpsRunning[client] = 2
                return true
            }
            guard accepted else {
                close(client)
                close(upstream)
                continue
            }
            // One thread per direction; the one that sees the end first shuts both sockets' writes
            // down, and the last one out closes them.
            for (from, to, record) in [(client, upstream, true), (upstream, client, false)] {
                let thread = Thread { [self] in
                    pump(from: from, to: to, record: record)
                    shutdown(to, Int32(SHUT_WR))
                    let last = state.withLock { state in
                        state.pumpsRunning[client, default: 1] -= 1
                        guard state.pumpsRunning[client] == 0 else { return false }
                        state.pumpsRunning[client] = nil
                        state.descriptors.subtract([client, upstream])
                        return true
                    }
                    if last {
                        close(client)
                        close(upstream)
                    }
                }
                thread.name = "relay :\(port) \(record ? "up" : "down")"
                thread.start()
            }
        }
    }

    private func pump(from: Int32, to: Int32, record: Bool) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(from, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return }
            state.withLock { state in
                guard record else {
                    state.received += Int64(count)
                    return
                }
                let room = Self.recordLimit - state.sent.count
                if room > 0 { state.sent.append(contentsOf: buffer[0..<min(count, room)]) }
            }
            var sent = 0
            while sent < count {
                let written = buffer.withUnsafeBytes {
                    send(to, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL))
                }
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { return }
                sent += written
            }
        }
    }
}
