import FastpullHTTP
import FoundationEssentials

extension Proxy {
    /// ``Proxy/init(parsing:source:)``, failing with a usage error.
    static func parsing(_ text: String, source: String) throws(FastpullError) -> Proxy {
        do {
            return try Proxy(parsing: text, source: source)
        } catch {
            throw FastpullError(.usage, error.message)
        }
    }
}

extension ProxyRules {
    /// Resolves `setting`. `.environment` reads `environment` as curl does:
    ///
    /// - `http_proxy` for `http://` URLs, else `HTTP_PROXY`, except in a CGI script (`REQUEST_METHOD`
    ///   set), where a client's `Proxy:` request header arrives as `HTTP_PROXY` ("httpoxy");
    /// - `https_proxy`, else `HTTPS_PROXY`, for `https://` URLs;
    /// - `no_proxy`, else `NO_PROXY`: a comma-separated ``ProxyBypass`` list.
    ///
    /// - `all_proxy`, else `ALL_PROXY`, for either scheme without its own variable.
    ///
    /// Lower case wins when both are set; an empty variable counts as unset. Fails with a usage error
    /// naming the variable when the proxy a scheme would use is not a usable `http://`, `socks5://`
    /// or `socks5h://` URL, a SOCKS4 one included: a download never goes direct because its proxy
    /// was not understood.
    init(_ setting: ProxySetting, environment: [String: String]) throws(FastpullError) {
        switch setting {
        case .none:
            self = .direct
        case .url(let text, let bypass):
            let proxy = try Proxy.parsing(text, source: "the proxy setting")
            self.init(http: proxy, https: proxy, bypass: ProxyBypass(bypass))
        case .environment:
            let http = Self.environmentProxy(secure: false, environment: environment)
            let https = Self.environmentProxy(secure: true, environment: environment)
            let bypass =
                Self.environmentValue("no_proxy", environment)
                ?? Self.environmentValue("NO_PROXY", environment)
            self.init(
                http: try http.map { (entry) throws(FastpullError) in
                    try Proxy.parsing(entry.value, source: entry.name)
                },
                https: try https.map { (entry) throws(FastpullError) in
                    try Proxy.parsing(entry.value, source: entry.name)
                },
                bypass: ProxyBypass(bypass.map { [$0.value] } ?? []))
        }
    }
}

extension ProxySetting {
    /// The variable of `environment` that names the proxy for `https://` (`secure`) or `http://`
    /// origins (`https_proxy`, else `HTTPS_PROXY`, else `all_proxy`, else `ALL_PROXY`; likewise
    /// `http_proxy`), with its value; nil when none is set. Where ``environment`` finds the proxy.
    package static func environmentProxy(secure: Bool, environment: [String: String]) -> (
        name: String, value: String
    )? {
        ProxyRules.environmentProxy(secure: secure, environment: environment)
    }

    /// Whether `text` names a SOCKS proxy (`socks4://`, `socks4a://`, `socks5://`, `socks5h://`; only
    /// the SOCKS5 ones are spoken).
    package static func isSOCKS(_ text: String) -> Bool { Proxy.socksScheme(of: text) != nil }

    /// Checks that `text` names a usable `http://`, `socks5://` or `socks5h://` proxy.
    ///
    /// - Throws: ``FastpullError/Code/usage``, naming `source` (a variable, an option) and never the
    ///   user information, for any other, a SOCKS4 proxy included.
    package static func check(_ text: String, source: String) throws(FastpullError) {
        _ = try Proxy.parsing(text, source: source)
    }
}
