import Glibc

/// One resolved IPv4 or IPv6 address with a port, ready for `connect(2)`.
package struct SocketAddress: Sendable {
    /// `AF_INET` or `AF_INET6`.
    package var family: Int32
    /// The raw address; only the first `length` bytes are meaningful.
    package var storage: sockaddr_storage
    /// The size of the `sockaddr_in`/`sockaddr_in6` inside `storage`.
    package var length: socklen_t

    /// The numeric address, e.g. "127.0.0.1" or "::1".
    package var numericHost: String {
        var storage = self.storage
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let result = withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST)
            }
        }
        guard result == 0 else { return "?" }
        return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Calls `body` with the address as a `sockaddr` pointer and its length.
    package func withSockAddr<Result, Failure: Error>(
        _ body: (UnsafePointer<sockaddr>, socklen_t) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        var storage = self.storage
        return try withUnsafePointer(to: &storage) { (pointer) throws(Failure) -> Result in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                (address) throws(Failure) -> Result in
                try body(address, length)
            }
        }
    }
}

extension SocketAddress {
    /// The address of `family` whose `length` bytes (a `sockaddr_in` or `sockaddr_in6`) are at
    /// `address`, copied.
    package init(family: Int32, copying address: UnsafeRawPointer, length: Int) {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: address, count: length))
        }
        self.init(family: family, storage: storage, length: socklen_t(length))
    }
}

/// Name resolution with `getaddrinfo(3)`. Blocks: call only from a connection thread.
package enum Resolver {
    /// All IPv4 and IPv6 addresses of `host` for TCP `port`, in the order `getaddrinfo` returns them
    /// (which follows RFC 6724 and `/etc/gai.conf`). IP literals resolve to themselves.
    ///
    /// `addressing`: a name pinned to addresses (`--resolve`) resolves to those, and only the family
    /// it allows is kept (`-4`, `-6`).
    package static func resolve(
        host: String, port: Int, addressing: Addressing = .standard
    ) throws(NetError) -> [SocketAddress] {
        let family =
            switch addressing.family {
            case .any: AF_UNSPEC
            case .ipv4: AF_INET
            case .ipv6: AF_INET6
            }
        guard let pinned = addressing.pinned[Addressing.key(host: host, port: port)] else {
            return try resolve(host, port: port, family: family, flags: AI_NUMERICSERV, named: host)
        }
        var addresses: [SocketAddress] = []
        for address in pinned {
            addresses +=
                (try? resolve(
                    address, port: port, family: family, flags: AI_NUMERICSERV | AI_NUMERICHOST, named: host))
                ?? []
        }
        guard !addresses.isEmpty else {
            throw .resolve(
                host: host,
                message:
                    "no \(Self.familyName(addressing.family))address among those it is pinned to (\(pinned.joined(separator: ", ")))",
                permanent: true)
        }
        return addresses
    }

    private static func familyName(_ family: Addressing.Family) -> String {
        switch family {
        case .any: ""
        case .ipv4: "IPv4 "
        case .ipv6: "IPv6 "
        }
    }

    /// `getaddrinfo` of `node` for TCP `port` in `family`, with `flags`; errors name `host`.
    private static func resolve(
        _ node: String, port: Int, family: Int32, flags: Int32, named host: String
    ) throws(NetError) -> [SocketAddress] {
        var hints = addrinfo()
        // Every family is asked for, and the one wanted kept: a literal of the other family would
        // otherwise fail as a lookup that may work later (EAI_ADDRFAMILY), and be retried.
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        hints.ai_flags = flags
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(node, String(port), &hints, &list)
        guard status == 0 else {
            let message =
                status == EAI_SYSTEM ? NetError.errnoText(errno) : String(cString: gai_strerror(status))
            // EAI_NONAME and EAI_FAIL say the name does not exist (or never will resolve); EAI_AGAIN, a
            // resolver that could not answer now, is worth asking again.
            throw .resolve(
                host: host, message: message, permanent: status == EAI_NONAME || status == EAI_FAIL)
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var entry = list
        while let current = entry?.pointee {
            entry = current.ai_next
            guard current.ai_family == AF_INET || current.ai_family == AF_INET6,
                family == AF_UNSPEC || current.ai_family == family,
                let source = current.ai_addr,
                Int(current.ai_addrlen) <= MemoryLayout<sockaddr_storage>.size
            else { continue }
            addresses.append(
                SocketAddress(family: current.ai_family, copying: source, length: Int(current.ai_addrlen)))
        }
        guard !addresses.isEmpty else {
            let wanted = family == AF_INET ? "IPv4" : family == AF_INET6 ? "IPv6" : "IPv4 or IPv6"
            throw .resolve(host: host, message: "no \(wanted) address", permanent: true)
        }
        return addresses
    }

    /// True when `host` is an IPv4 or IPv6 literal (without brackets) rather than a name.
    package static func isIPLiteral(_ host: String) -> Bool {
        var buffer = in6_addr()
        return inet_pton(AF_INET, host, &buffer) == 1 || inet_pton(AF_INET6, host, &buffer) == 1
    }
}
