import FastpullFixtures
import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP

/// Servers that misframe an answer once the connection's next request has arrived (HTTP/1.1
/// pipelining): cut short of its length with the next answer straight after, or run past it. The
/// bytes where the client expects the answer's last ones are then the next answer's head and body, or
/// stray ones. The file is right, or the download fails: never a wrong byte.
@Suite("Requests ahead against servers that misframe answers")
struct PipeliningFaultTests {
    let folder = TemporaryFolder()

    /// A server fault, where the server is, and when requests go ahead.
    struct Case: Sendable, CustomTestStringConvertible {
        /// The query that makes answers misframe (`pipeline-cut=N` or `pipeline-long=N`).
        var fault: String
        var tls: Bool
        var pipelining: Pipelining

        var testDescription: String { "\(fault), \(tls ? "TLS" : "plain"), \(pipelining.rawValue)" }
    }

    static let cases: [Case] = [
        // The end of an answer: its last 1000 bytes are the next head and the first of its body.
        Case(fault: "pipeline-cut=1000", tls: false, pipelining: .always),
        // Its middle: the next answer starts 64 KiB before the end.
        Case(fault: "pipeline-cut=65536", tls: false, pipelining: .always),
        // As soon as the request arrives: the rest of the answer is the next one.
        Case(fault: "pipeline-cut=1073741824", tls: false, pipelining: .always),
        // Past its end: 1000 bytes of the content that follows, then the next answer.
        Case(fault: "pipeline-long=1000", tls: false, pipelining: .always),
        Case(fault: "pipeline-cut=1000", tls: true, pipelining: .always),
        Case(fault: "pipeline-long=1000", tls: true, pipelining: .always),
        // The default: TLS whose handshake takes 5 ms, a round trip at which requests go ahead.
        Case(fault: "pipeline-cut=1000", tls: true, pipelining: .automatic),
    ]

    /// 6 MiB over two connections in pieces of 3 MiB, answers 20 ms after their request at 1 MB/s
    /// each (the client reads at most 3 MB/s, so the server's pace decides when a request arrives):
    /// each window is a second of its connection's speed, so each connection sends requests ahead,
    /// and the server misframes the answer they arrive in. The
    /// download ends with the right file, every request ahead was proven or its held bytes fetched
    /// again (the trace says so), and none went ahead after the first that was not.
    /// Each case on the machine's own write path and received into a mapping of the file.
    @Test(arguments: cases, [nil, WritePath.Forced.mapped])
    func aMisframedAnswerIsNeverCommitted(_ test: Case, writePath: WritePath.Forced?) async throws {
        let (events, records) = try await download(
            fault: test.fault, tls: test.tls, pipelining: test.pipelining, writePath: writePath)
        let summary = "\(records.filter { $0["event"] as? String != "progress" })"
        // The fault was met: a request went ahead, and its answer did not prove the one before.
        let firstUnproven = try #require(events.firstIndex(of: "ahead unproven"), "\(summary)")
        #expect(events[..<firstUnproven].contains("request ahead"), "\(summary)")
        // Held bytes were given back, not committed.
        let held = records[firstUnproven]["held"] as? Int ?? 0
        #expect(held > 0, "\(summary)")
        // No request goes ahead after a server misframed one's answer.
        #expect(!events[(firstUnproven + 1)...].contains("request ahead"), "\(summary)")
    }

    /// A clean server on the same link: every request ahead is proven by the head that follows, and
    /// none is fetched again.
    @Test func aCleanServersAnswersAreProvenByTheHeadsThatFollowThem() async throws {
        let (events, _) = try await download(fault: nil, tls: false, pipelining: .always)
        #expect(events.contains("request ahead"))
        #expect(!events.contains("ahead unproven"))
        #expect(!events.contains("ahead stopped"))
    }

    /// Downloads the file over the link the tests share (with `fault` in the query, over TLS whose
    /// handshake takes 5 ms when `tls`), checks that every byte of it is right, and returns the
    /// trace's events, with the records they came from.
    func download(fault: String?, tls: Bool, pipelining: Pipelining, writePath: WritePath.Forced? = nil)
        async throws -> (
            events: [String], records: [[String: Any]]
        )
    {
        var serverConfiguration = FixtureServer.Configuration()
        serverConfiguration.tls = tls
        serverConfiguration.handshakeDelayMilliseconds = tls ? 5 : 0
        let server = try FixtureServer(serverConfiguration)
        let size = 6 << 20
        var configuration = Configuration.quickRetries(connections: 2)
        configuration.connections.minimumSegmentSize = 3 << 20
        configuration.connections.maximumBytesPerSecond = 3_000_000
        configuration.connections.pipelining = pipelining
        configuration.writePath = writePath
        configuration.diagnostics.traceFile = folder.path + "/trace.jsonl"
        if tls { configuration.tls.caFile = FixturePaths.certificatesDirectory + "/ca.pem" }
        let query = "rate=1000000&ttfb=20" + (fault.map { "&" + $0 } ?? "")
        let report = try await Download(
            from: server.url("/gen/\(size)?\(query)"), to: folder.url("out.bin"), configuration: configuration
        ).run()
        #expect(report.sha256 == Expected.sha256(size: size))
        #expect(try Expected.sha256(ofFile: folder.url("out.bin")) == Expected.sha256(size: size))
        let records = try SchedulerTests.traceRecords(folder.path + "/trace.jsonl")
        return (records.compactMap { $0["event"] as? String }, records)
    }
}

@Suite("What proves a pipelined answer's framing")
struct AheadProofTests {
    static func head(_ status: Int, _ fields: [(name: String, value: String)] = []) -> ResponseHead {
        ResponseHead(
            versionMajor: 1, versionMinor: 1, status: status, reason: "", headers: HTTPHeaders(fields))
    }

    static func proves(_ head: ResponseHead) -> Bool { Ahead.head(head, proves: 100..<200) }

    @Test func aPartialAnswerForTheWindowProvesIt() {
        #expect(Self.proves(Self.head(206, [("Content-Range", "bytes 100-199/1000")])))
        #expect(!Self.proves(Self.head(206, [("Content-Range", "bytes 101-199/1000")])))
        #expect(!Self.proves(Self.head(206, [("Content-Range", "bytes 100-200/1000")])))
        #expect(!Self.proves(Self.head(206)))
        #expect(
            !Self.proves(
                Self.head(
                    206,
                    [
                        ("Content-Range", "bytes 100-199/1000"),
                        ("Content-Type", "multipart/byteranges; boundary=x"),
                    ])))
    }

    /// A head that parses where the answer ended but is no 206 for the window could be bytes of a
    /// file that holds recorded HTTP traffic: it proves nothing.
    @Test func noOtherAnswerProvesIt() {
        #expect(!Self.proves(Self.head(200, [("Content-Length", "1000")])))
        #expect(!Self.proves(Self.head(503, [("Content-Length", "0")])))
        #expect(!Self.proves(Self.head(404, [("Content-Length", "0")])))
        #expect(!Self.proves(Self.head(416, [("Content-Range", "bytes */1000")])))
    }
}
