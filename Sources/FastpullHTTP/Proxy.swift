import FastpullNet
import FoundationEssentials
import Glibc

/// A proxy: which kind, where to connect, and the credentials its URL carries.
///
/// An `http://` proxy is reached over plain TCP; `https://` origins go through a `CONNECT` tunnel, so
/// TLS still runs end to end with the origin. A SOCKS5 proxy (`socks5://`, `socks5h://`, RFC 1928)
/// opens a TCP tunnel to the origin for either scheme (``SOCKS5``).
package struct Proxy: Sendable, Hashable, CustomStringConvertible {
    /// What the proxy speaks.
    package enum Kind: String, Sendable, Hashable {
        /// HTTP: absolute-form requests, `CONNECT` tunnels.
        case http
        /// SOCKS5, given the origin's address as this side resolves it.
        case socks5
        /// SOCKS5, given the origin's name for the proxy to resolve.
        case socks5h
    }

    /// The proxy's host name or IP literal (IPv6 without brackets).
    package var host: String
    package var port: Int
    /// `Basic …` from the user information of an `http://` proxy URL, sent as `Proxy-Authorization` to
    /// the proxy only. Never part of ``description``.
    package var authorization: String?
    /// What it speaks.
    package var kind: Kind = .http
    /// The user name and password of a SOCKS5 proxy URL (RFC 1929). Never part of ``description``.
    package var socksCredentials: SOCKS5.Credentials?

    /// The port of a proxy URL that names none (curl's default).
    package static let defaultPort = 1080

    package init(
        host: String, port: Int, authorization: String? = nil, kind: Kind = .http,
        socksCredentials: SOCKS5.Credentials? = nil
    ) {
        self.host = host
        self.port = port
        self.authorization = authorization
        self.kind = kind
        self.socksCredentials = socksCredentials
    }

    /// Parses `[http://][user[:password]@]host[:port][/]` (curl's syntax: no scheme means `http://`, no
    /// port means 1080). User and password are percent-decoded. `source` names where the text came from
    /// (`--proxy`, `https_proxy`) in errors, which never repeat the user information.
    package init(parsing text: String, source: String) throws(ProxyError) {
        let trimmed = text.trimmingSpaces()
        let shown = Proxy.redacted(trimmed)
        func invalid(_ why: String) -> ProxyError {
            ProxyError(message: "invalid proxy '\(shown)' in \(source): \(why)")
        }
        if let scheme = Proxy.socksScheme(of: trimmed), !scheme.hasPrefix("socks5") {
            // A variable's name is all letters and underscores; other sources are options or settings.
            let variable = source.allSatisfy {
                $0 == "_" || ("a"..."z").contains($0) || ("A"..."Z").contains($0)
            }
            throw ProxyError(
                message:
                    "\(source): '\(shown)' is a SOCKS4 proxy (\(scheme)://), and only SOCKS5 is supported; "
                    + "use socks5h:// or an http:// proxy instead\(variable ? ", or unset \(source)" : "")")
        }
        let full = trimmed.contains("://") ? trimmed : "http://" + trimmed
        guard let components = URLComponents(string: full) else { throw invalid("not a URL") }
        let scheme = components.scheme?.lowercased() ?? ""
        guard let kind = Kind(rawValue: scheme) else {
            throw invalid(
                "unsupported scheme '\(scheme)'; http://, socks5:// and socks5h:// proxies are supported")
        }
        var host = components.host ?? ""
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw invalid("no host") }
        guard components.path.isEmpty || components.path == "/", components.query == nil,
            components.fragment == nil
        else { throw invalid("a proxy URL has no path or query") }
        if let port = components.port, !(1...65535).contains(port) {
            throw invalid("port \(port) is out of range")
        }
        self.host = host
        self.port = components.port ?? Proxy.defaultPort
        self.kind = kind
        self.authorization = nil
        self.socksCredentials = nil
        guard let user = components.user else { return }
        let password = components.password ?? ""
        if kind == .http {
            self.authorization = Requests.basicAuthorization(user: user, password: password)
        } else {
            guard user.utf8.count <= 255, password.utf8.count <= 255, !user.isEmpty else {
                throw invalid("a SOCKS5 user name and password are 1 to 255 bytes")
            }
            self.socksCredentials = SOCKS5.Credentials(user: user, password: password)
        }
    }

    /// The scheme of `text` when it names a SOCKS proxy (`socks4`, `socks4a`, `socks5`, `socks5h`,
    /// `socks`, any case), lowercased; nil for any other.
    package static func socksScheme(of text: String) -> String? {
        guard let end = text.firstRange(of: "://")?.lowerBound else { return nil }
        let scheme = text[..<end].trimmingSpaces().lowercased()
        return ["socks", "socks4", "socks4a", "socks5", "socks5h"].contains(scheme) ? scheme : nil
    }

    /// `host:port`, IPv6 literals in brackets.
    package var authority: String { NetError.hostAndPort(host, port) }

    /// `http://host:port` (or `socks5h://…`), without credentials: safe for messages and traces.
    package var description: String { "\(kind.rawValue)://\(authority)" }

    /// `text` with everything between the scheme and the last `@` (the user information, even one
    /// holding an unencoded `/`) replaced by `***`, for messages.
    package static func redacted(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@") else { return text }
        let schemeEnd = text.firstRange(of: "://").map { $0.upperBound } ?? text.startIndex
        return String(text[..<min(schemeEnd, at)]) + "***" + String(text[at...])
    }
}

/// How one origin is reached.
package enum ProxyRoute: Sendable, Hashable {
    /// A direct connection to the origin; origin-form request targets.
    case direct
    /// An `http://` origin through a proxy: absolute-form request targets (`GET http://host/path`) and
    /// `Proxy-Authorization` on every request.
    case forward(Proxy)
    /// An `https://` origin through a `CONNECT` tunnel; inside it, TLS and origin-form requests as if
    /// direct.
    case tunnel(Proxy)
    /// Either scheme through a SOCKS5 tunnel (``SOCKS5``); inside it, requests (and TLS) as if direct.
    case socks(Proxy)

    /// The proxy in between, if any.
    package var proxy: Proxy? {
        switch self {
        case .direct: return nil
        case .forward(let proxy), .tunnel(let proxy), .socks(let proxy): return proxy
        }
    }
}

/// Which proxy each origin goes through: a ``ProxySetting`` resolved once, when a download starts.
package struct ProxyRules: Sendable, Hashable {
    /// The proxy for `http://` origins.
    package var http: Proxy?
    /// The proxy for `https://` origins.
    package var https: Proxy?
    /// Origins that are reached directly whatever the proxies.
    package var bypass: ProxyBypass

    /// Every origin directly.
    package static let direct = ProxyRules(http: nil, https: nil, bypass: ProxyBypass())

    package init(http: Proxy?, https: Proxy?, bypass: ProxyBypass) {
        self.http = http
        self.https = https
        self.bypass = bypass
    }

    /// The variable that names the proxy for `https://` (`secure`) or `http://` origins in
    /// `environment`, and its value, as ``init(_:environment:)`` picks it; nil when none is set.
    package static func environmentProxy(secure: Bool, environment: [String: String]) -> (
        name: String, value: String
    )? {
        let own =
            secure
            ? environmentValue("https_proxy", environment) ?? environmentValue("HTTPS_PROXY", environment)
            : environmentValue("http_proxy", environment)
                // In a CGI script HTTP_PROXY is a client's `Proxy:` request header ("httpoxy").
                ?? (environment["REQUEST_METHOD"] != nil ? nil : environmentValue("HTTP_PROXY", environment))
        return own ?? environmentValue("all_proxy", environment) ?? environmentValue("ALL_PROXY", environment)
    }

    /// The variable `name` of `environment`, trimmed; nil when unset or empty.
    package static func environmentValue(_ name: String, _ environment: [String: String]) -> (
        name: String, value: String
    )? {
        guard let value = environment[name]?.trimmingSpaces(), !value.isEmpty else { return nil }
        return (name, value)
    }

    /// The variables ``init(_:environment:)`` reads, looked up one by one (building the process's
    /// whole environment for every download cost more than a small file's transfer).
    package static var environmentVariables: [String: String] {
        var found: [String: String] = [:]
        for name in [
            "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy",
            "NO_PROXY", "REQUEST_METHOD",
        ] {
            if let value = getenv(name) { found[name] = String(cString: value) }
        }
        return found
    }

    /// How to reach `origin`.
    package func route(to origin: Origin) -> ProxyRoute {
        guard let proxy = origin.secure ? https : http, !bypass.matches(host: origin.host, port: origin.port)
        else { return .direct }
        guard proxy.kind == .http else { return .socks(proxy) }
        return origin.secure ? .tunnel(proxy) : .forward(proxy)
    }
}

/// A proxy setting that is not a usable proxy; the message names where it came from and never its
/// user information.
package struct ProxyError: Error, Sendable {
    package var message: String
}
