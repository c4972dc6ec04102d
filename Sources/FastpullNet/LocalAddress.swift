import Glibc

/// The local address connections are made from (curl's `--interface`, wget's `--bind-address`): an
/// IP address, or the name of a network interface, whose addresses are used.
package enum LocalAddress {
    /// The addresses `name` stands for, each with port 0: the address itself for an IP literal, else
    /// every IPv4 and IPv6 address of the interface of that name (in the system's order).
    ///
    /// - Throws: ``NetError/localAddress(_:)`` naming `name` when there is no such address or
    ///   interface, or the interface has no address.
    package static func addresses(for name: String) throws(NetError) -> [SocketAddress] {
        if let literal = literal(name) { return [literal] }
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { throw .system(call: "getifaddrs", errno: errno) }
        defer { freeifaddrs(list) }
        var found = false
        var addresses: [SocketAddress] = []
        var entry = list
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            guard String(cString: current.pointee.ifa_name) == name else { continue }
            found = true
            guard let address = current.pointee.ifa_addr else { continue }
            let family = Int32(address.pointee.sa_family)
            guard family == AF_INET || family == AF_INET6 else { continue }
            let length =
                family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size
            addresses.append(SocketAddress(family: family, copying: address, length: length))
        }
        guard found else {
            throw .localAddress(
                "cannot connect from \(name): no network interface or IP address of that name")
        }
        guard !addresses.isEmpty else {
            throw .localAddress("cannot connect from \(name): the network interface has no IP address")
        }
        return addresses
    }

    /// `text` as a socket address with port 0, when it is an IPv4 or IPv6 address.
    private static func literal(_ text: String) -> SocketAddress? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr = v4
            return withUnsafeBytes(of: address) {
                SocketAddress(family: AF_INET, copying: $0.baseAddress!, length: $0.count)
            }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_addr = v6
            return withUnsafeBytes(of: address) {
                SocketAddress(family: AF_INET6, copying: $0.baseAddress!, length: $0.count)
            }
        }
        return nil
    }
}
