import FastpullNet
import FoundationEssentials

/// Following HTTP redirects (RFC 9110 §15.4).
package enum Redirect {
    /// Whether `status` is a redirect whose `Location` should be followed: 301, 302, 303, 307 or 308.
    package static func isRedirect(_ status: Int) -> Bool {
        switch status {
        case 301, 302, 303, 307, 308:
            return true
        default:
            return false
        }
    }

    /// The absolute URL a `Location` value points to, resolved against the URL of the request that got
    /// the redirect (RFC 3986 §5.2): absolute, scheme-relative (`//host/x`), absolute-path and relative
    /// references, with dot segments removed. The result keeps the fragment of `location` only; the
    /// base's fragment is dropped. Bytes not allowed in a URI (spaces, non-ASCII) are percent-encoded.
    ///
    /// Returns nil when `location` is empty, holds control characters or cannot be parsed, or when the
    /// result is not an `http`/`https` URL with a host.
    package static func resolve(location: String, against base: URL) -> URL? {
        let trimmed = HTTPHeaders.trimmingWhitespace(Substring(location))
        guard !trimmed.isEmpty, !trimmed.utf8.contains(where: HTTPHeaders.isControl) else { return nil }
        guard let resolved = URL(string: String(trimmed), relativeTo: base)?.absoluteURL,
            var components = URLComponents(url: resolved, resolvingAgainstBaseURL: false),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host, !host.isEmpty
        else { return nil }
        components.scheme = scheme
        return components.url
    }
}
