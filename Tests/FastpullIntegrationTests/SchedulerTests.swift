import FastpullFixtures
import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine

@Suite("Scheduling against uneven servers")
struct SchedulerTests {
    let server: FixtureServer
    let folder = TemporaryFolder()

    init() throws {
        server = try FixtureServer()
    }

    func run(_ path: String, _ configuration: Configuration) async throws -> (Report, [Event]) {
        let download = Download(
            from: server.url(path), to: folder.url("out.bin"), configuration: configuration)
        let log = EventLog(download)
        let report = try await download.run()
        return (report, await log.finish())
    }

    static func traceRecords(_ path: String) throws -> [[String: Any]] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
    }

    /// A server whose every answer takes a second to start (an object store's per-request cost, made
    /// large) and then comes at loopback speed. Before: a HEAD, then one window after another, each
    /// paying its second. Now the probe is the download's first GET, for all of the file; the other
    /// connections' requests (when they started in time) still wait for their answers when that answer
    /// reaches their pieces, so it takes them over: the whole file comes in the probe's one answer.
    @Test func onAServerWhoseRequestsCostASecondTheProbesAnswerCarriesTheFile() async throws {
        let size = 16 << 20
        var configuration = Configuration.quickRetries(connections: 4)
        configuration.diagnostics.traceFile = folder.path + "/trace.jsonl"
        let (report, _) = try await run("/gen/\(size)?ttfb=1000", configuration)
        #expect(report.sha256 == Expected.sha256(size: size))
        let records = try Self.traceRecords(folder.path + "/trace.jsonl")
        let opened = records.filter { $0["event"] as? String == "window" && $0["how"] as? String == "opened" }
        #expect(opened.count == 1)
        #expect(opened.first?["conn"] as? Int == 0 && opened.first?["end"] as? Int == size)
        let ends: Set = ["done", "cut", "stall", "retry"]
        var bytesByConnection: [Int: Int] = [:]
        for record in records where ends.contains(record["event"] as? String ?? "") {
            bytesByConnection[record["conn"] as? Int ?? -1, default: 0] += record["bytes"] as? Int ?? 0
        }
        #expect(bytesByConnection[0] == size, "\(bytesByConnection)")
    }

    /// Events of `kind` in a trace, by their `how` where given.
    static func count(_ records: [[String: Any]], _ kind: String, how: String? = nil) -> Int {
        records.filter { $0["event"] as? String == kind && (how == nil || $0["how"] as? String == how) }.count
    }

    /// 8 MiB from a server whose answers start 20 ms after their request and come at 2 MB/s on each of
    /// two connections, in pieces of 4 MiB (`more` adds to the query); checks the file and returns
    /// the trace. The client reads at most 3 MB/s in all: a window holds a second of its connection's
    /// speed, and a connection whose thread a loaded machine held for half a second, then read what
    /// its socket had gathered meanwhile, measured a speed whose window took its whole piece (no
    /// window followed it, so none could be asked for ahead).
    func pipelinedRecords(_ more: String = "") async throws -> [[String: Any]] {
        let size = 8 << 20
        var configuration = Configuration.quickRetries(connections: 2)
        configuration.connections.minimumSegmentSize = 4 << 20
        configuration.connections.maximumBytesPerSecond = 3_000_000
        // On loopback: its round trip is too short for them to go ahead by default.
        configuration.connections.pipelining = .always
        configuration.diagnostics.traceFile = folder.path + "/trace.jsonl"
        let (report, _) = try await run("/gen/\(size)?rate=2000000&ttfb=20" + more, configuration)
        #expect(report.sha256 == Expected.sha256(size: size))
        return try Self.traceRecords(folder.path + "/trace.jsonl")
    }

    /// A server whose answers start 20 ms after their request (a round trip of a real network) and
    /// come at 2 MB/s on each of two connections, each with a piece of 4 MiB (a window holds a
    /// second of its speed): a connection sends the request for the next window of its piece before
    /// its answer ends (the trace has the request before that answer's end), the windows asked for
    /// ahead are read on the same connection, and the file is right.
    @Test func onAServerWhoseRequestsCost20msTheNextRequestGoesBeforeTheAnswerEnds() async throws {
        let records = try await pipelinedRecords()
        let summary = "\(records.filter { $0["event"] as? String != "progress" })"
        let sent = Self.count(records, "request ahead")
        let taken = Self.count(records, "window", how: "ahead")
        #expect(taken >= 1, "\(summary)")
        #expect(sent >= taken)
        #expect(Self.count(records, "ahead stopped") == 0)
        // Each request ahead went while the answer before it was still coming: the window it
        // follows was read to its end after it.
        for (index, request) in records.enumerated() where request["event"] as? String == "request ahead" {
            let connection = request["conn"] as? Int
            let current = records[..<index].last {
                $0["event"] as? String == "window" && $0["conn"] as? Int == connection
                    && $0["end"] as? Int == request["start"] as? Int
            }
            let ended = records[(index + 1)...].contains {
                $0["event"] as? String == "done" && $0["conn"] as? Int == connection
                    && $0["start"] as? Int == current?["start"] as? Int
            }
            #expect(current != nil && ended, "\(request): \(summary)")
        }
    }

    /// The same server closing each connection after one answer, without saying so: the request sent
    /// ahead is never answered (the close resets the connection, which can take the answer's last
    /// bytes with it). The download stops sending requests ahead and ends with the right file.
    @Test func aServerThatTakesOneRequestPerConnectionStopsRequestsAhead() async throws {
        let records = try await pipelinedRecords("&quiet-close=1")
        let sent = Self.count(records, "request ahead")
        #expect(sent >= 1)
        #expect(Self.count(records, "ahead stopped") >= 1)
        // At most one per connection: each was out before the first stop.
        #expect(sent <= 2, "\(records.filter { $0["event"] as? String != "progress" })")
    }

    @Test func aSlowConnectionsTailIsTakenOverByFastOnes() async throws {
        // Three connections; every third accepted one crawls at 100 kB/s, the others at 4 MB/s.
        let size = 6 << 20
        var configuration = Configuration.quickRetries(connections: 3)
        configuration.diagnostics.traceFile = folder.path + "/trace.jsonl"
        let (report, events) = try await run(
            "/gen/\(size)?rate=4000000&slow-every=3&slow-rate=100000", configuration)
        #expect(report.sha256 == Expected.sha256(size: size))
        // Its range is taken over: stolen or hedged by the fast ones, or given back when it is
        // replaced for being far slower than its peers (whichever comes first on this machine).
        let takeovers = events.filter { if case .steal = $0.detail { true } else { false } }
        let records = try Self.traceRecords(folder.path + "/trace.jsonl")
        let replaced = records.contains(where: Self.reconnects)
        #expect(
            !takeovers.isEmpty || replaced, "\(records.filter { $0["event"] as? String != "progress" })")
        // The trace shows who fetched what; the slow connection fetched a small part of the file.
        let ends: Set = ["done", "cut", "stall", "retry"]
        var bytesByConnection: [Int: Int] = [:]
        for record in records where ends.contains(record["event"] as? String ?? "") {
            bytesByConnection[record["conn"] as? Int ?? -1, default: 0] += record["bytes"] as? Int ?? 0
        }
        #expect(bytesByConnection.values.reduce(0, +) == size)
        // Unless it went on over a new (fast) connection, the slow one fetched little.
        if !replaced { #expect(bytesByConnection.values.min()! < size / 6) }
    }

    /// Whether a trace record is a connection closed to go on over a new one: replaced for a stall
    /// or for being far slower than its peers, or cut short with much of its answer unread. Not the
    /// probe's open-ended answer (the only window from byte 0, on the server's first connection, never
    /// a slow one here), which is cut and closed in every download once the others take its end.
    static func reconnects(_ record: [String: Any]) -> Bool {
        let event = record["event"] as? String
        guard record["start"] as? Int != 0 else { return false }
        return event == "stall" || (event == "cut" && record["closed"] as? Bool == true)
    }

    /// One connection in four crawls at 1/40 of the others' speed: it gives its range back and
    /// reconnects (the server serves the new connection fast), rather than waiting for the tail.
    @Test func aFarSlowerConnectionReconnects() async throws {
        let size = 32 << 20
        var configuration = Configuration.quickRetries(connections: 4)
        configuration.diagnostics.traceFile = folder.path + "/trace.jsonl"
        let (report, _) = try await run(
            "/gen/\(size)?rate=4000000&slow-every=4&slow-rate=100000", configuration)
        #expect(report.sha256 == Expected.sha256(size: size))
        let records = try Self.traceRecords(folder.path + "/trace.jsonl")
        let reconnects = records.filter(Self.reconnects)
        #expect(!reconnects.isEmpty, "\(records.filter { $0["event"] as? String != "progress" }.suffix(40))")
        // Its first answer was cut short: the slow connection fetched little before it was replaced.
        let first = try #require(reconnects.first)
        #expect(first["bytes"] as? Int ?? size < size / 8)
        // The default stall timeout (10 s) cannot have fired: the slow one did receive bytes.
        #expect(configuration.timeouts.stall >= .seconds(10))
    }

    @Test func aConnectionThatStallsForeverIsReplaced() async throws {
        let size = 4 << 20
        var configuration = Configuration.quickRetries(connections: 2)
        configuration.timeouts.stall = .milliseconds(300 * FaultRun.timeScale)
        configuration.diagnostics.traceFile = folder.path + "/trace.jsonl"
        // The first response stops sending after 100 000 bytes and never closes. The other connection
        // runs at 2 MB/s, so it cannot fetch the whole file and take over the stalled one's bytes
        // before the stall is seen (it did in a CI run: the file was in, and nothing stalled).
        let (report, _) = try await run(
            "/gen/\(size)?stall-after=100000&stalls=1&rate=2000000", configuration)
        #expect(report.sha256 == Expected.sha256(size: size))
        let records = try Self.traceRecords(folder.path + "/trace.jsonl")
        #expect(records.contains { $0["event"] as? String == "stall" })
    }

    @Test func aFixedCountIsKept() async throws {
        let size = 8 << 20
        let (report, events) = try await run("/gen/\(size)?rate=4000000", .quickRetries(connections: 3))
        #expect(report.connections == 3)
        #expect(!events.contains { if case .connections(let count) = $0.detail { count > 3 } else { false } })
    }

    @Test func theTraceIsValidJSONLines() async throws {
        var configuration = Configuration.quickRetries(connections: 4)
        configuration.diagnostics.traceFile = folder.path + "/trace.jsonl"
        _ = try await run("/gen/\(6 << 20)?rate=4000000", configuration)
        let records = try Self.traceRecords(folder.path + "/trace.jsonl")
        #expect(records.allSatisfy { $0["t"] is Double && $0["event"] is String })
        let windows = records.filter { $0["event"] as? String == "window" }
        #expect(!windows.isEmpty)
        #expect(windows.allSatisfy { ($0["start"] as? Int ?? -1) < ($0["end"] as? Int ?? -1) })
        // Every connection but the first starts a moment later: a sleep that waited behind the
        // process's other woken tasks once started them after the first had fetched everything.
        #expect(
            Set(windows.compactMap { $0["conn"] as? Int }).count >= 2,
            "\(records.filter { $0["event"] as? String != "progress" })")
    }
}

@Suite("HostConnectionLimiter")
struct HostConnectionLimiterTests {
    @Test func limitsPerHostAndReleases() {
        let limiter = HostConnectionLimiter()
        #expect(limiter.acquire("a", limit: 2))
        #expect(limiter.acquire("a", limit: 2))
        #expect(!limiter.acquire("a", limit: 2))
        #expect(limiter.acquire("b", limit: 2))
        limiter.release("a")
        #expect(limiter.count("a") == 1)
        #expect(limiter.acquire("a", limit: 2))
        limiter.release("a")
        limiter.release("a")
        limiter.release("b")
        #expect(limiter.count("a") == 0 && limiter.count("b") == 0)
    }

    /// Connections count per host and port: another port of the same machine is another server.
    @Test func aHostIsANameAndAPort() throws {
        let key = { (text: String) in HostConnectionLimiter.key(for: URL(string: text)!) }
        #expect(key("http://127.0.0.1:8080/a") == "127.0.0.1:8080")
        #expect(key("http://127.0.0.1:8081/b") == "127.0.0.1:8081")
        #expect(key("http://Example.org/x") == key("http://example.org:80/y"))
        #expect(key("https://example.org/x") == "example.org:443")
        #expect(key("http://[::1]:9000/") == "::1:9000")
    }
}
