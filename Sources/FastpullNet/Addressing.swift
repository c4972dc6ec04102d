/// Which addresses a connection may use, as curl's `-4`, `-6` and `--resolve` set them: one address
/// family only, and names pinned to addresses (one edge of a CDN, a cache node, a host not in DNS)
/// instead of being looked up.
package struct Addressing: Sendable, Hashable {
    /// The address families a connection may use.
    package enum Family: Sendable, Hashable {
        case any, ipv4, ipv6
    }

    package var family: Family
    /// The addresses (IP literals) to use for `host:port` (the host lowercased), instead of looking
    /// the name up.
    package var pinned: [String: [String]]

    package init(family: Family = .any, pinned: [String: [String]] = [:]) {
        self.family = family
        self.pinned = pinned
    }

    /// Any family, nothing pinned.
    package static let standard = Addressing()

    /// The key of `host` and `port` in ``pinned``.
    package static func key(host: String, port: Int) -> String { "\(host.lowercased()):\(port)" }
}
