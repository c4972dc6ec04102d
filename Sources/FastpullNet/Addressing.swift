/// Which addresses a connection may use, as curl's `-4`, `-6`, `--resolve` and `--interface` set
/// them: one address family only, names pinned to addresses (one edge of a CDN, a cache node, a host
/// not in DNS) instead of being looked up, and the local address it comes from.
package struct Addressing: Sendable, Hashable {
    /// The address families a connection may use.
    package enum Family: Sendable, Hashable {
        case any, ipv4, ipv6
    }

    package var family: Family
    /// The addresses (IP literals) to use for `host:port` (the host lowercased), instead of looking
    /// the name up.
    package var pinned: [String: [String]]
    /// The IP address or network interface connections are made from (``LocalAddress``); nil for
    /// the system's choice.
    package var local: String?

    package init(family: Family = .any, pinned: [String: [String]] = [:], local: String? = nil) {
        self.family = family
        self.pinned = pinned
        self.local = local
    }

    /// Any family, nothing pinned.
    package static let standard = Addressing()

    /// The key of `host` and `port` in ``pinned``.
    package static func key(host: String, port: Int) -> String { "\(host.lowercased()):\(port)" }
}
