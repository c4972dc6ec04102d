/// One request as a real server or proxy logged it. Fields the server does not log are nil.
public struct AccessLogEntry: Sendable, Hashable, CustomStringConvertible {
    /// The request method: `GET`, `HEAD`, `CONNECT`.
    public var method: String
    /// The request target: a path with its query (origins), an absolute URL or `host:port` (proxies).
    public var target: String
    /// The response status (nil for tinyproxy, which does not log it).
    public var status: Int?
    /// The request's `Range` header.
    public var range: String?
    /// Bytes the server sent: the body for origin servers, the whole reply (headers too) for squid.
    public var bytesSent: Int64?
    /// What tells the server's connections apart: nginx's `$connection` serial number, h2o's connection
    /// id, the client's port for apache, lighttpd and squid; nil where the log has none (moto,
    /// tinyproxy).
    public var connection: String?
    /// Further request headers the server logged, by lowercase name (`if-range`, `authorization`,
    /// `proxy-authorization`); a header the request did not have is absent.
    public var headers: [String: String]

    /// An entry with the given fields.
    public init(
        method: String, target: String, status: Int? = nil, range: String? = nil, bytesSent: Int64? = nil,
        connection: String? = nil, headers: [String: String] = [:]
    ) {
        self.method = method
        self.target = target
        self.status = status
        self.range = range
        self.bytesSent = bytesSent
        self.connection = connection
        self.headers = headers
    }

    /// The path part of ``target`` without its query (for an absolute URL, the part after the authority).
    public var path: String {
        var rest = Substring(target)
        if let scheme = rest.range(of: "://") {
            rest = rest[scheme.upperBound...]
            rest = rest.firstIndex(of: "/").map { rest[$0...] } ?? "/"
        }
        return String(rest.prefix { $0 != "?" })
    }

    /// One line: `GET /f 206 bytes=0-9 10 conn=3`.
    public var description: String {
        var parts = [method, target, status.map(String.init) ?? "-", range ?? "-"]
        parts.append(bytesSent.map(String.init) ?? "-")
        if let connection { parts.append("conn=\(connection)") }
        for name in headers.keys.sorted() { parts.append("\(name)=\(headers[name]!)") }
        return parts.joined(separator: " ")
    }
}
