/// What a server saw during one run: the content bytes it sent, requests and connections.
struct ServerStats: Sendable, Codable, Equatable {
    var bodyBytes: Int64 = 0
    var requests = 0
    var connections = 0
    /// With several mirrors: the body bytes each one sent, by its label.
    var bodyBytesBySource: [String: Int64] = [:]
    /// Requests answered 503 (a mirror's connection limit).
    var refused = 0

    static func + (left: ServerStats, right: ServerStats) -> ServerStats {
        ServerStats(
            bodyBytes: left.bodyBytes + right.bodyBytes, requests: left.requests + right.requests,
            connections: left.connections + right.connections,
            bodyBytesBySource: left.bodyBytesBySource.merging(right.bodyBytesBySource, uniquingKeysWith: +),
            refused: left.refused + right.refused)
    }
}

/// A server the harness downloads from: nginx or the fixture server.
protocol BenchServer: AnyObject {
    /// A short description for the report.
    var summary: String { get }
    /// The URL of the file at `path` (relative to the served folder, e.g. `src-1024.bin`).
    func url(for path: String, tls: Bool) -> String
    /// Starts counting for a new run.
    func beginRun() throws
    /// What the server sent since ``beginRun()`` (waiting briefly for logs to settle).
    func endRun() -> ServerStats
    /// Body bytes sent since ``beginRun()`` right now, when the server can tell while a run is going
    /// (the fixture server can; nginx logs a request only when it ends).
    var liveBodyBytes: Int64? { get }
    /// Stops the server.
    func stop()
}
