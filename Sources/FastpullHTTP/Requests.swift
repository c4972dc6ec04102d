import FastpullNet
import FoundationEssentials

/// The request heads Fastpull sends.
package enum Requests {
    /// `User-Agent: fastpull/<version>`.
    package static let userAgent = "fastpull/\(FastpullVersion.number)"

    /// A request for `url` on a connection to `origin`, optionally for one byte range (inclusive), with
    /// `extraHeaders` appended after the standard fields (the probe's `Want-Repr-Digest`, for example).
    ///
    /// `settings` adds what the user asked for (see ``RequestSettings``); `route` says whether the
    /// request goes straight to the origin (or through a `CONNECT` tunnel: origin-form target) or to a
    /// forward proxy (absolute-form target, `Proxy-Authorization`).
    package static func make(
        _ method: String, _ url: URL, origin: Origin, range: ClosedRange<Int64>? = nil,
        ifRange: String? = nil,
        extraHeaders: [(name: String, value: String)] = [],
        settings: RequestSettings = .standard,
        route: ProxyRoute = .direct
    ) -> RequestHead {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: origin.hostHeader)
        if let userAgent = settings.userAgent { headers.add(name: "User-Agent", value: userAgent) }
        headers.add(name: "Accept", value: "*/*")
        headers.add(name: "Accept-Encoding", value: "identity")
        if let range {
            headers.add(name: "Range", value: "bytes=\(range.lowerBound)-\(range.upperBound)")
            if let ifRange { headers.add(name: "If-Range", value: ifRange) }
        }
        for field in extraHeaders {
            headers.add(name: field.name, value: field.value)
        }
        let trusted = settings.trusts(origin)
        if trusted, let authorization = settings.authorization {
            headers.add(name: "Authorization", value: authorization)
        }
        // The user's fields replace ours of the same name; an empty value only removes ours.
        let fields = settings.fields.filter { field in
            trusted || !RequestSettings.sensitiveNames.contains { HTTPHeaders.namesEqual($0, field.name) }
        }
        for field in fields {
            headers.remove(name: field.name)
        }
        for field in fields where !field.value.isEmpty {
            headers.add(name: field.name, value: field.value)
        }

        var target = url.requestTarget
        switch route {
        case .direct:
            break
        case .tunnel, .socks:
            // The proxy's credentials went in the CONNECT request (or the SOCKS5 handshake); the
            // origin has no use for them.
            headers.remove(name: "Proxy-Authorization")
        case .forward(let proxy):
            target = origin.description + target
            if let authorization = proxy.authorization {
                headers.remove(name: "Proxy-Authorization")
                headers.add(name: "Proxy-Authorization", value: authorization)
            }
        }
        return RequestHead(method: method, target: target, headers: headers)
    }

    /// The `CONNECT host:port` request that opens a tunnel to `origin` through `proxy`, with the proxy's
    /// credentials: those of its URL, else a `Proxy-Authorization` field the user gave (only for the
    /// origin the user asked for).
    package static func connect(to origin: Origin, through proxy: Proxy, settings: RequestSettings)
        -> RequestHead
    {
        let authority = NetError.hostAndPort(origin.host, origin.port)
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: authority)
        if let userAgent = settings.userAgent { headers.add(name: "User-Agent", value: userAgent) }
        let userField = settings.fields.last { HTTPHeaders.namesEqual($0.name, "Proxy-Authorization") }
        if let authorization = proxy.authorization {
            headers.add(name: "Proxy-Authorization", value: authorization)
        } else if settings.trusts(origin), let userField, !userField.value.isEmpty {
            headers.add(name: "Proxy-Authorization", value: userField.value)
        }
        return RequestHead(method: "CONNECT", target: authority, headers: headers)
    }

    /// `Basic <base64(user:password)>` (RFC 7617, UTF-8).
    package static func basicAuthorization(user: String, password: String) -> String {
        "Basic " + Base64.encode(Array("\(user):\(password)".utf8))
    }
}

/// What the user asked every request of one download to carry: extra header fields, Basic credentials
/// and the `User-Agent`. Checked once, when the download starts.
///
/// Security: `Authorization`, `Cookie` and `Proxy-Authorization` fields and the credentials belong to
/// the origin (scheme, host, port) of the URL the user asked for. Requests to any other origin (after a
/// redirect, including one from https to http on the same host) go without them, as curl does. Other
/// fields go to every origin.
package struct RequestSettings: Sendable {
    /// The `User-Agent` value, or nil to send none.
    package var userAgent: String?
    /// The user's fields, in order. An empty value removes Fastpull's field of that name and sends none
    /// (curl's `-H 'Accept:'`).
    package var fields: [(name: String, value: String)]
    /// `Basic …` from the configured credentials.
    package var authorization: String?
    /// The origin the credentials and sensitive fields may go to.
    package var trustedOrigin: Origin?

    /// Fastpull's own fields only.
    package static let standard = RequestSettings(
        userAgent: Requests.userAgent, fields: [], authorization: nil, trustedOrigin: nil)

    /// Fields that frame the request or the connection; Fastpull sets them and a user field cannot.
    package static let reservedNames = [
        "Host", "Range", "If-Range", "Content-Length", "Transfer-Encoding", "Connection",
    ]
    /// Fields that carry secrets: sent only to the trusted origin.
    package static let sensitiveNames = ["Authorization", "Cookie", "Proxy-Authorization"]

    package init(
        userAgent: String?, fields: [(name: String, value: String)], authorization: String?,
        trustedOrigin: Origin?
    ) {
        self.userAgent = userAgent
        self.fields = fields
        self.authorization = authorization
        self.trustedOrigin = trustedOrigin
    }

    /// Whether secrets may go to `origin`: it is the trusted origin (host compared case-insensitively).
    package func trusts(_ origin: Origin) -> Bool {
        guard let trustedOrigin else { return false }
        return trustedOrigin.secure == origin.secure && trustedOrigin.port == origin.port
            && trustedOrigin.host.lowercased() == origin.host.lowercased()
    }

    /// The valid start of a malformed field name, for a message: never more than the name part of
    /// what may be a whole `Name: value` line.
    package static func shown(_ name: String) -> String {
        let valid = String(decoding: name.utf8.prefix(while: HTTPHeaders.isTokenCharacter), as: UTF8.self)
        return valid.utf8.count == name.utf8.count ? valid : valid + "…"
    }

    package static func hasControlCharacter(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }
}
