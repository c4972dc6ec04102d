import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Free TCP ports on 127.0.0.1 for servers started as child processes.
///
/// The kernel picks a port (bind to port 0) and the socket is closed again, so another process could take
/// the port before the server binds it; ``ServerLauncher`` retries with new ports when a server reports
/// "address in use". Within this process no port is handed out twice, so tests running in parallel never
/// pick the same one.
enum LoopbackPort {
    private static let handedOut = Mutex<Set<Int>>([])

    /// A port that was free a moment ago and that this process has not handed out before.
    static func free() throws(RealServerError) -> Int {
        for _ in 0..<64 {
            let port = try kernelChosenPort()
            let fresh = handedOut.withLock { $0.insert(port).inserted }
            if fresh { return port }
        }
        throw RealServerError("no fresh loopback port after 64 tries")
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

    private static func kernelChosenPort() throws(RealServerError) -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw RealServerError("socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var address = loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw RealServerError("bind: \(String(cString: strerror(errno)))") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
