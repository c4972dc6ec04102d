import FastpullNet
import Glibc

/// Whether this machine can reach a host now, asked of the kernel's routing table without sending a
/// packet: a UDP socket `connect`ed to the host's address only looks up the route. No route (the link
/// is down, the address gone, no default route) means the network is away; a route means it is there,
/// and a failure to reach the host is the host's. A name that cannot be resolved for now counts as
/// away (the resolver is usually behind the same link). Blocking: call from a thread of its own.
enum NetworkReach {
    static func isAway(host: String, port: Int) -> Bool {
        let addresses: [SocketAddress]
        do {
            addresses = try Resolver.resolve(host: host, port: port)
        } catch {
            if case .resolve(_, _, let permanent) = error { return !permanent }
            return false
        }
        for address in addresses {
            let fd = socket(address.family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            if address.withSockAddr({ connect(fd, $0, $1) }) == 0 { return false }
            guard [ENETUNREACH, EHOSTUNREACH, ENETDOWN, EADDRNOTAVAIL].contains(errno) else { return false }
        }
        return !addresses.isEmpty
    }
}
