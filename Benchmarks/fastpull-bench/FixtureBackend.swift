import FastpullFixtures
import Foundation

/// The in-process `FastpullFixtures` server serving the source folder under `/files/`, with the scenario's
/// limits: a total rate shared by all connections (a server setting) and per-connection rate and time to
/// first byte (query parameters on every URL).
final class FixtureBackend: BenchServer {
    private let server: FixtureServer
    private let query: String
    let summary: String

    /// Starts a server for `directory` with these limits.
    init(
        directory: String, totalRate: Int?, perConnectionRate: Int?, ttfbMilliseconds: Int,
        stallAfter: Int64?,
        tls: Bool
    ) throws {
        var configuration = FixtureServer.Configuration()
        configuration.filesDirectory = directory
        configuration.totalRate = totalRate
        configuration.tls = tls
        server = try FixtureServer(configuration)
        var parameters: [String] = []
        if let perConnectionRate { parameters.append("rate=\(perConnectionRate)") }
        if ttfbMilliseconds > 0 { parameters.append("ttfb=\(ttfbMilliseconds)") }
        if let stallAfter { parameters.append("stall-after=\(stallAfter)") }
        query = parameters.isEmpty ? "" : "?" + parameters.joined(separator: "&")
        summary =
            ServerChoice.fixture(
                totalRate: totalRate, perConnectionRate: perConnectionRate,
                ttfbMilliseconds: ttfbMilliseconds,
                stallAfter: stallAfter
            ).summary
    }

    func url(for path: String, tls: Bool) -> String {
        server.url("/files/\(path)\(query)").absoluteString
    }

    func beginRun() throws {
        server.resetStats()
        server.resetFaults()
    }

    func endRun() -> ServerStats {
        let stats = server.stats
        return ServerStats(
            bodyBytes: stats.bodyBytesSent, requests: stats.requests, connections: stats.connections)
    }

    var liveBodyBytes: Int64? { server.stats.bodyBytesSent }

    func stop() { server.stop() }
}
