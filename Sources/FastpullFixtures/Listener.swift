#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The listening socket and the accept loop (which runs on the server's listener thread).
enum Listener {
    /// Opens a listening TCP socket on `host` (an IPv4 or IPv6 literal, or `localhost` for 127.0.0.1)
    /// and `port` (0 picks a free port); returns the socket and the bound port.
    static func open(host: String, port: Int) throws(FixtureServerError) -> (socket: Int32, port: Int) {
        let literal = host == "localhost" ? "127.0.0.1" : host
        var address = sockaddr_storage()
        let length: socklen_t
        let family: Int32
        var ipv4 = in_addr()
        var ipv6 = in6_addr()
        guard (0...65535).contains(port) else { throw .badAddress("port \(port) is out of range") }
        if inet_pton(AF_INET, literal, &ipv4) == 1 {
            family = AF_INET
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutableBytes(of: &address) { raw in
                let pointer = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                pointer.pointee.sin_family = sa_family_t(AF_INET)
                pointer.pointee.sin_port = in_port_t(UInt16(port).bigEndian)
                pointer.pointee.sin_addr = ipv4
            }
        } else if inet_pton(AF_INET6, literal, &ipv6) == 1 {
            family = AF_INET6
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeMutableBytes(of: &address) { raw in
                let pointer = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                pointer.pointee.sin6_family = sa_family_t(AF_INET6)
                pointer.pointee.sin6_port = in_port_t(UInt16(port).bigEndian)
                pointer.pointee.sin6_addr = ipv6
            }
        } else {
            throw .badAddress("\(host) is not an IP address literal")
        }

        #if canImport(Glibc)
            let socketType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #else
            let socketType = SOCK_STREAM
        #endif
        let fd = socket(family, socketType, 0)
        guard fd >= 0 else { throw .system(call: "socket", message: Syscalls.describeErrno()) }
        Syscalls.setOption(fd, level: SOL_SOCKET, name: SO_REUSEADDR, value: 1)
        if family == AF_INET6 {
            Syscalls.setOption(fd, level: Int32(IPPROTO_IPV6), name: IPV6_V6ONLY, value: 1)
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        // Non-blocking, so that a connection reset between poll and accept cannot block the listener
        // thread in accept (accepted sockets are made blocking again).
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        guard bound == 0, listen(fd, 1024) == 0 else {
            let message = Syscalls.describeErrno()
            close(fd)
            throw .system(call: "bind/listen on \(host):\(port)", message: message)
        }
        var actual = sockaddr_storage()
        var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) }
        }
        return (fd, Int(portNumber(of: actual)))
    }

    /// Closes a listening socket that was never handed to a server.
    static func closeSocket(_ socket: Int32) {
        _ = close(socket)
    }

    /// Accepts connections until the server stops, handing each to a new connection thread.
    static func acceptLoop(_ core: ServerCore) {
        while core.waitReadable(socket: core.listenSocket) {
            var peer = sockaddr_storage()
            var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept(core.listenSocket, $0, &peerLength)
                }
            }
            guard fd >= 0 else {
                // EINTR, ECONNABORTED, EAGAIN (another wake-up took it), or out of descriptors: back off a
                // little in the last case, then keep listening.
                if errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM {
                    _ = core.pause(nanoseconds: 10_000_000)
                }
                continue
            }
            // accept4 is not visible from Swift's Glibc module: set close-on-exec (so that processes the
            // test spawns do not inherit connections) and blocking mode (BSD sockets inherit the
            // listener's O_NONBLOCK) by hand.
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
            Syscalls.setOption(fd, level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: 1)
            core.serve(socket: fd, peer: describe(peer))
        }
    }

    private static func portNumber(of address: sockaddr_storage) -> UInt16 {
        let family = Int32(address.ss_family)
        return withUnsafeBytes(of: address) { raw in
            if family == AF_INET6 {
                return UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
            }
            return UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
        }
    }

    /// `address:port` (IPv6 in brackets), for the request log.
    private static func describe(_ address: sockaddr_storage) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = Int32(address.ss_family)
        let converted: Bool = withUnsafeBytes(of: address) { raw in
            if family == AF_INET6 {
                var ip = raw.load(as: sockaddr_in6.self).sin6_addr
                return inet_ntop(AF_INET6, &ip, &text, socklen_t(text.count)) != nil
            }
            var ip = raw.load(as: sockaddr_in.self).sin_addr
            return inet_ntop(AF_INET, &ip, &text, socklen_t(text.count)) != nil
        }
        let host =
            converted
            ? String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        let port = portNumber(of: address)
        return family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
