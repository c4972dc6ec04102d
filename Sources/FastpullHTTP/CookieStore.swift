import FastpullNet
import FoundationEssentials
import Synchronization

/// One cookie (RFC 6265): what a server set, and where it goes back.
package struct Cookie: Sendable, Equatable {
    package var name: String
    package var value: String
    /// Lowercased, without a leading dot.
    package var domain: String
    /// Sent to `domain` alone (no `Domain` attribute), not to its subdomains.
    package var hostOnly: Bool
    package var path: String
    /// Sent over https only.
    package var secure: Bool
    /// Seconds since 1970 when it expires; nil for a cookie of this run only.
    package var expires: Int64?
    package var httpOnly = false

    package init(
        name: String, value: String, domain: String, hostOnly: Bool, path: String, secure: Bool,
        expires: Int64?, httpOnly: Bool = false
    ) {
        self.name = name
        self.value = value
        self.domain = domain
        self.hostOnly = hostOnly
        self.path = path
        self.secure = secure
        self.expires = expires
        self.httpOnly = httpOnly
    }

    /// Whether it goes with a request to `host` and `path` (over https when `secure`) at `now`.
    package func matches(host: String, path requestPath: String, secure isSecure: Bool, now: Int64) -> Bool {
        if let expires, expires <= now { return false }
        if secure && !isSecure { return false }
        let host = host.lowercased()
        guard host == domain || (!hostOnly && host.hasSuffix("." + domain)) else { return false }
        if requestPath == path { return true }
        guard requestPath.hasPrefix(path) else { return false }
        return path.hasSuffix("/") || requestPath.dropFirst(path.count).hasPrefix("/")
    }
}

/// The cookies of a run: set by `Set-Cookie` answers, sent back in `Cookie` fields where their domain,
/// path and `Secure` allow, read from and written to Netscape cookie files (curl's, wget's and
/// aria2's format).
package final class CookieStore: Sendable {
    private let cookies = Mutex<[Cookie]>([])

    package init() {}

    /// The cookies held, expired ones included until they are replaced.
    package var all: [Cookie] { cookies.withLock { $0 } }

    /// The `Cookie` field value for a request to `url`, nil when no cookie goes there. Longer paths
    /// first, as RFC 6265 orders them.
    package func header(for url: URL, now: Int64 = CookieStore.now()) -> String? {
        guard let host = url.host(percentEncoded: false) else { return nil }
        let path = url.path(percentEncoded: true).isEmpty ? "/" : url.path(percentEncoded: true)
        let secure = url.scheme?.lowercased() == "https"
        let matching = cookies.withLock { cookies in
            cookies.filter { $0.matches(host: host, path: path, secure: secure, now: now) }
        }
        guard !matching.isEmpty else { return nil }
        return matching.sorted { $0.path.count > $1.path.count }.map { "\($0.name)=\($0.value)" }
            .joined(separator: "; ")
    }

    /// Takes the cookie a `Set-Cookie` value sets, for an answer from `url`; one whose `Domain` is
    /// not the host's own or a parent of it is ignored, and an expired one removes its namesake.
    package func store(setCookie value: String, from url: URL, now: Int64 = CookieStore.now()) {
        guard let cookie = Self.parse(setCookie: value, from: url, now: now) else { return }
        add(cookie)
    }

    /// Adds `cookie`, replacing one of the same name, domain and path.
    package func add(_ cookie: Cookie, now: Int64 = CookieStore.now()) {
        cookies.withLock { cookies in
            cookies.removeAll {
                $0.name == cookie.name && $0.domain == cookie.domain && $0.path == cookie.path
            }
            if cookie.expires.map({ $0 > now }) ?? true { cookies.append(cookie) }
        }
    }

    /// The cookie of one `Set-Cookie` value for an answer from `url`, or nil when it is malformed or
    /// names a domain `url`'s host may not set.
    package static func parse(setCookie value: String, from url: URL, now: Int64) -> Cookie? {
        guard let host = url.host(percentEncoded: false)?.lowercased(), !host.isEmpty else { return nil }
        var parts = value.split(separator: ";", omittingEmptySubsequences: false).map {
            HTTPHeaders.trimmingWhitespace($0)
        }
        guard !parts.isEmpty, let equals = parts[0].firstIndex(of: "=") else { return nil }
        let name = String(HTTPHeaders.trimmingWhitespace(parts[0][..<equals]))
        let cookieValue = String(HTTPHeaders.trimmingWhitespace(parts[0][parts[0].index(after: equals)...]))
        guard !name.isEmpty else { return nil }
        parts.removeFirst()
        let requestPath = url.path(percentEncoded: true)
        var cookie = Cookie(
            name: name, value: cookieValue, domain: host, hostOnly: true,
            path: defaultPath(requestPath), secure: false, expires: nil)
        var maxAge: Int64?
        for attribute in parts {
            let pieces = attribute.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = HTTPHeaders.trimmingWhitespace(pieces[0]).lowercased()
            let argument = pieces.count > 1 ? String(HTTPHeaders.trimmingWhitespace(pieces[1])) : ""
            switch key {
            case "domain":
                var domain = argument.lowercased()
                if domain.hasPrefix(".") { domain.removeFirst() }
                guard !domain.isEmpty else { continue }
                // Only the host itself or a parent domain of it with a dot in it (not `com`).
                guard host == domain || (host.hasSuffix("." + domain) && domain.contains(".")) else {
                    return nil
                }
                cookie.domain = domain
                cookie.hostOnly = false
            case "path":
                if argument.hasPrefix("/") { cookie.path = argument }
            case "secure":
                cookie.secure = true
            case "httponly":
                cookie.httpOnly = true
            case "max-age":
                if let seconds = Int64(argument) { maxAge = seconds }
            case "expires":
                if maxAge == nil, let date = HTTPDate.parse(argument) {
                    cookie.expires = Int64(date.timeIntervalSince1970)
                }
            default:
                continue
            }
        }
        if let maxAge { cookie.expires = maxAge <= 0 ? now : now + maxAge }
        return cookie
    }

    /// The directory of a request path, as RFC 6265 §5.1.4 defaults a cookie's path.
    static func defaultPath(_ path: String) -> String {
        guard path.hasPrefix("/"), let slash = path.lastIndex(of: "/"), slash != path.startIndex else {
            return "/"
        }
        return String(path[..<slash])
    }

    /// Reads a Netscape cookie file: `DOMAIN TAB SUBDOMAINS TAB PATH TAB SECURE TAB EXPIRES TAB NAME TAB
    /// VALUE` a line, `#` comments (`#HttpOnly_` before a domain marks an HttpOnly cookie).
    ///
    /// - Returns: the numbers of the lines that are neither comments nor cookies.
    @discardableResult
    package func load(netscape text: String) -> [Int] {
        var bad: [Int] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = raw.hasSuffix("\r") ? raw.dropLast() : raw
            var httpOnly = false
            if line.hasPrefix("#HttpOnly_") {
                line = line.dropFirst("#HttpOnly_".count)
                httpOnly = true
            } else if line.hasPrefix("#") || line.allSatisfy(\.isWhitespace) {
                continue
            }
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 7, let expires = Int64(fields[4]), !fields[0].isEmpty, !fields[5].isEmpty
            else {
                bad.append(index + 1)
                continue
            }
            var domain = fields[0].lowercased()
            let dotted = domain.hasPrefix(".")
            if dotted { domain.removeFirst() }
            add(
                Cookie(
                    name: String(fields[5]), value: String(fields[6]), domain: domain,
                    hostOnly: !(dotted || fields[1].uppercased() == "TRUE"), path: String(fields[2]),
                    secure: fields[3].uppercased() == "TRUE", expires: expires == 0 ? nil : expires,
                    httpOnly: httpOnly))
        }
        return bad
    }

    /// The cookies that have not expired, as a Netscape cookie file.
    package func netscape(now: Int64 = CookieStore.now()) -> String {
        var lines = ["# Netscape HTTP Cookie File", "# Written by fastpull. Edit at your own risk.", ""]
        for cookie in all where cookie.expires.map({ $0 > now }) ?? true {
            let domain = (cookie.hostOnly ? "" : ".") + cookie.domain
            lines.append(
                [
                    (cookie.httpOnly ? "#HttpOnly_" : "") + domain, cookie.hostOnly ? "FALSE" : "TRUE",
                    cookie.path, cookie.secure ? "TRUE" : "FALSE", String(cookie.expires ?? 0), cookie.name,
                    cookie.value,
                ].joined(separator: "\t"))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Seconds since 1970, now.
    package static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }
}
