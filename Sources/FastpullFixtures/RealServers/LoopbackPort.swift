import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Free TCP ports on 127.0.0.1 for servers started as child processes.
///
/// Ports are drawn at random from below the kernel's ephemeral range
/// (`/proc/sys/net/ipv4/ip_local_port_range`), so neither a `bind` to port 0 (another test's own server)
/// nor an outgoing connection's local port can take one between the check here and the server's `bind`:
/// a port taken there would have let the readiness check connect to whoever took it and hand the test a
/// server that never listened. A port is checked free by binding it; another process could still bind
/// it explicitly, so ``ServerLauncher`` retries with new ports when a server reports "address in use".
/// Within this process no port is handed out twice, so tests running in parallel never pick the same one.
public enum LoopbackPort {
    private static let handedOut = Mutex<Set<Int>>([])

    /// A port that was free a moment ago, outside the ephemeral range, and that this process has not
    /// handed out before.
    public static func free() throws(RealServerError) -> Int {
        let candidates = explicitRange
        for _ in 0..<256 {
            let port = Int.random(in: candidates)
            guard isBindable(port) else { continue }
            let fresh = handedOut.withLock { $0.insert(port).inserted }
            if fresh { return port }
        }
        throw RealServerError("no free loopback port in \(candidates) after 256 tries")
    }

    /// The ports the kernel never hands out by itself: from 10000 up to the start of its ephemeral range
    /// (Linux's default 32768–60999 leaves 10000–32767); above the range when that is the larger room.
    static let explicitRange: ClosedRange<Int> = {
        let text =
            (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let bounds = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        let (low, high) = bounds.count == 2 ? (bounds[0], bounds[1]) : (32768, 60999)
        let below = 10000...max(10000, low - 1)
        let above = min(65535, high + 1)...65535
        return below.count >= above.count ? below : above
    }()

    /// Whether 127.0.0.1:`port` can be bound now (nothing listens on it or holds it as a local port).
    private static func isBindable(_ port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = loopbackAddress(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == 0
    }

    /// True once something accepts TCP connections on 127.0.0.1:`port`. A loopback connect is answered at
    /// once (accepted or refused), so this never waits.
    static func accepts(_ port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = loopbackAddress(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0
    }

    /// The IPv4 socket address 127.0.0.1:`port`.
    static func loopbackAddress(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}
