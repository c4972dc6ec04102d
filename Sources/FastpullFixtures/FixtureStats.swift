/// Totals a ``FixtureServer`` has counted since it started (or since its last `resetStats()`).
///
/// Requests for `/__stats` itself are not counted, so reading the statistics over HTTP does not change
/// them.
public struct FixtureStats: Sendable, Equatable, Codable {
    /// HTTP requests received (every method, every status), except `/__stats`.
    public var requests: Int
    /// Bytes of resource content (`/gen/…`, `/files/…`) actually handed to the socket (or to TLS), in
    /// every response body. Framing (chunk sizes) and the small text bodies of redirects, errors and
    /// injected statuses are not counted, so this measures how many content bytes a client fetched,
    /// including bytes fetched more than once.
    public var bodyBytesSent: Int64
    /// TCP connections that sent at least one counted request (connections that only fetched
    /// `/__stats`, or failed the TLS handshake, are not counted).
    public var connections: Int

    /// Creates statistics with the given totals.
    public init(requests: Int = 0, bodyBytesSent: Int64 = 0, connections: Int = 0) {
        self.requests = requests
        self.bodyBytesSent = bodyBytesSent
        self.connections = connections
    }

    /// The JSON object served at `/__stats`: `{"requests":N,"bodyBytesSent":N,"connections":N}`.
    var json: String {
        "{\"requests\":\(requests),\"bodyBytesSent\":\(bodyBytesSent),\"connections\":\(connections)}"
    }
}
