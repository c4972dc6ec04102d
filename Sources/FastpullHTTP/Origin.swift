import FastpullNet
import FoundationEssentials

/// Scheme, host and port: what a connection is bound to, and what the pool keys on.
package struct Origin: Sendable, Hashable, CustomStringConvertible {
    package var secure: Bool
    package var host: String
    package var port: Int

    /// The origin of an `http` or `https` URL, or nil for any other scheme or a URL without a host.
    package init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return nil }
        guard var host = url.host(percentEncoded: false), !host.isEmpty else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.secure = scheme == "https"
        self.host = host
        self.port = url.port ?? (secure ? 443 : 80)
    }

    /// The `Host` header value: IPv6 literals in brackets, the port only when not the default.
    package var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (secure ? 443 : 80) ? name : "\(name):\(port)"
    }

    package var description: String { "\(secure ? "https" : "http")://\(hostHeader)" }

    /// The host and port, as the per-host limit counts connections (``HostConnectionLimiter``).
    package var hostKey: String { "\(host.lowercased()):\(port)" }
}

extension URL {
    /// The request target: the percent-encoded path (or `/`) and query.
    package var requestTarget: String {
        let url = baseURL == nil ? self : absoluteURL
        let path = url.path(percentEncoded: true)
        var target = path.isEmpty ? "/" : path
        if let query = url.query(percentEncoded: true) { target += "?" + query }
        return target
    }
}
