/// One extra request header field, as `-H 'Name: value'` gives it.
public struct Header: Sendable, Hashable {
    /// The field name.
    public var name: String
    /// The field value.
    public var value: String

    /// Creates a header field.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// HTTP Basic credentials for the origin of the URL asked for (`-u user:password` or `~/.netrc`).
public struct Credentials: Sendable, Hashable {
    /// The user name.
    public var user: String
    /// The password.
    public var password: String

    /// Creates credentials.
    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }
}

/// Which proxy (HTTP or SOCKS5) requests go through.
public enum ProxySetting: Sendable, Hashable {
    /// Connect directly.
    case none
    /// `HTTP_PROXY`/`http_proxy`, `HTTPS_PROXY`/`https_proxy` and `NO_PROXY`/`no_proxy`, as curl reads them.
    case environment
    /// This proxy for every URL (an `http://` proxy, HTTPS going through a `CONNECT` tunnel; or a
    /// `socks5h://` proxy, which resolves the names, or `socks5://`, given addresses), except hosts
    /// matching `bypass` (NO_PROXY syntax: host names, `.domain` suffixes, `*`).
    case url(String, bypass: [String] = [])
}
