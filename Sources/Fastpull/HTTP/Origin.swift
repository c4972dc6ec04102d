import FoundationEssentials

/// Scheme, host and port: what a connection is bound to, and what the pool keys on.
struct Origin: Sendable, Hashable, CustomStringConvertible {
    var secure: Bool
    var host: String
    var port: Int

    /// The origin of an `http` or `https` URL, or nil for any other scheme or a URL without a host.
    init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return nil }
        guard var host = url.host(percentEncoded: false), !host.isEmpty else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.secure = scheme == "https"
        self.host = host
        self.port = url.port ?? (secure ? 443 : 80)
    }

    /// The `Host` header value: IPv6 literals in brackets, the port only when not the default.
    var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (secure ? 443 : 80) ? name : "\(name):\(port)"
    }

    var description: String { "\(secure ? "https" : "http")://\(hostHeader)" }

    /// The host and port, as the per-host limit counts connections (``HostConnectionLimiter``).
    var hostKey: String { "\(host.lowercased()):\(port)" }
}

extension URL {
    /// The request target: the percent-encoded path (or `/`) and query.
    var requestTarget: String {
        let url = baseURL == nil ? self : absoluteURL
        let path = url.path(percentEncoded: true)
        var target = path.isEmpty ? "/" : path
        if let query = url.query(percentEncoded: true) { target += "?" + query }
        return target
    }
}
