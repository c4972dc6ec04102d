import FastpullFixtures
import Foundation
import Glibc
import Synchronization
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP
@testable import FastpullNet

/// What servers this project did not write do, reproduced on loopback: each finding of trying Fastpull
/// against Apache, S3, haproxy and others, where curl and aria2c got the file and Fastpull did not, or
/// got it only with errors (the interop suite runs the real servers).
@Suite("Servers with quirks", .timeLimit(.minutes(5)))
struct ServerQuirksTests {
    let server: FixtureServer
    let folder = TemporaryFolder()

    init() throws {
        server = try FixtureServer()
    }

    var output: URL { folder.url("out.bin") }

    /// Apache answers an `If-Range` date as a mismatch (a 200 with the whole file) while the file is
    /// younger than a minute. Before: every range came back whole, the download restarted twice and
    /// exited 5. Now a date that young is not sent in `If-Range` (every answer's validators are still
    /// checked), and the ranges are served.
    @Test func aFileChangedSecondsAgoOnAServerLikeApache() async throws {
        let size = 2 << 20
        let body = FixtureContent.bytes(count: size, seed: 5)
        let now = Date()
        let modified = HTTPDateText.format(now.addingTimeInterval(-2))
        let date = HTTPDateText.format(now)
        let responder = try RangeResponder(body: body, largestAnswer: 512 << 10) { request, range in
            // No ETag, a Last-Modified two seconds old: Apache's If-Range rule.
            let common = "Last-Modified: \(modified)\r\nDate: \(date)\r\nAccept-Ranges: bytes\r\n"
            if request.contains("If-Range:") { return .whole(extraHeaders: common) }
            return range == nil ? .whole(extraHeaders: common) : .partial(extraHeaders: common)
        }
        defer { responder.stop() }
        let report = try await FaultRun.download(
            responder.url("/fresh"), to: output, .quickRetries(connections: 4)
        ).get()
        #expect(report.rangesSupported)
        #expect(try Data(contentsOf: output) == Data(body))
        #expect(responder.rangedRequests > 1)
    }

    /// HEAD refused with 404 while GET works. Before: exit 4 (only 403, 405 and 501 fell back to GET).
    @Test func aHEADRefusedWith404FallsBackToGET() async throws {
        let size = (1 << 20) + 1
        let report = try await FaultRun.download(
            server.url("/gen/\(size)?head=404"), to: output, .quickRetries()
        ).get()
        #expect(report.rangesSupported)
        #expect(report.sha256 == Expected.sha256(size: size))
    }

    /// An empty object behind a presigned S3 URL: HEAD is refused (403, closing the connection, as S3
    /// does), and a range gets a 416 without Content-Range. Before: retried for 5 s, exit 4. Now: the
    /// empty file, exit 0, from exactly two requests: the download's first GET (`Range: bytes=0-`) is
    /// its probe, and its 416 is confirmed by a GET without a range (a server that answers every
    /// range so, while the file has bytes, sends them there).
    @Test func anEmptyObjectWhoseRangeIsUnsatisfiableWithoutContentRange() async throws {
        let log = RequestLog()
        let responder = try Self.emptyObject(log: log)
        defer { responder.stop() }
        let target = "/bucket/empty?X-Amz-Signature=abc&X-Amz-Credential=key"
        let result = await FaultRun.download(responder.url(target), to: output, .quickRetries(1))
        // Checked whatever the result, so that a failed download still shows what it asked.
        #expect(log.requestLines == ["GET \(target) HTTP/1.1", "GET \(target) HTTP/1.1"])
        #expect(log.all.first.map { $0.contains("\r\nRange: bytes=0-\r\n") } == true)
        #expect(log.all.last.map { !$0.contains("\r\nRange:") } == true)
        let report = try result.get()
        #expect(report.size == 0)
        #expect(try Data(contentsOf: output).isEmpty)
        #expect(report.retries == 0)
    }

    /// The probe of a resumed download (or of a plan) asks HEAD; refused there, it asks the first
    /// byte. The same empty object: HEAD refused, `bytes=0-0` answered 416 without Content-Range, and
    /// a GET without a range answered with no bytes: an empty file, from exactly those three requests.
    @Test func aHEADProbeRefusedFallsBackToTheFirstByte() throws {
        let log = RequestLog()
        let responder = try Self.emptyObject(log: log)
        defer { responder.stop() }
        let pool = ConnectionPool(tlsOptions: TLSOptions(), timeouts: Timeouts())
        defer { pool.closeAll() }
        let outcome = try Probe(pool: pool, maximumRedirects: 5).run(
            responder.url("/empty"), slot: CancellationSlot())
        #expect(outcome.remote.size == 0)
        #expect(log.requestLines == ["HEAD /empty HTTP/1.1", "GET /empty HTTP/1.1", "GET /empty HTTP/1.1"])
        #expect(log.all[1].contains("\r\nRange: bytes=0-0\r\n"))
        #expect(log.all.last.map { !$0.contains("\r\nRange:") } == true)
    }

    /// An empty object as S3 serves it by a presigned URL: HEAD refused (403, closing the connection),
    /// any range answered 416 without Content-Range, a GET without one with no bytes. Every request is
    /// recorded in `log`.
    static func emptyObject(log: RequestLog) throws -> RawResponder {
        try RawResponder { request in
            log.record(request)
            if request.hasPrefix("HEAD") {
                return .bytes(
                    Array("HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n".utf8))
            }
            let tag = "ETag: \"d41d8cd98f00b204e9800998ecf8427e\"\r\n"
            guard request.contains("\r\nRange:") else {
                return .bytes(Array("HTTP/1.1 200 OK\r\n\(tag)Content-Length: 0\r\n\r\n".utf8))
            }
            return .bytes(
                Array("HTTP/1.1 416 Requested Range Not Satisfiable\r\n\(tag)Content-Length: 0\r\n\r\n".utf8))
        }
    }

    /// A server that keeps every connection alive by the protocol but drops it after each answer (as
    /// haproxy with a short keep-alive timeout does between requests), or drops it only once the next
    /// request arrived, closing it or resetting it. Before: each reuse of a dropped connection was a
    /// failure, counted and backed off. Now a pooled connection the server has closed is dropped before
    /// it is used, and one found closed or reset only once the request went out costs just a reconnect
    /// (``ConnectionPool/exchange(_:to:slot:)`` sends the request once more on a new connection): no
    /// retry is counted.
    @Test(arguments: [
        RangeResponder.KeepAlive.closeAfterEachAnswer, .closeOnSecondRequest, .resetOnSecondRequest,
    ])
    func aServerThatDropsKeptAliveConnectionsCostsNoRetries(keepAlive: RangeResponder.KeepAlive) async throws
    {
        let responder = try await downloadFromAServerThatDrops(
            keepAlive, size: 8 << 20, connections: 2, minimumSegmentSize: 256 << 10)
        #expect(responder.rangedRequests > 2)
        if keepAlive != .closeAfterEachAnswer {
            // Only a reused connection gets a second request: the stale path was taken.
            #expect(responder.droppedRequests >= 1)
        }
    }

    /// The probe's HEAD (a resumed download's, or a plan's) is refused (405) on a connection the
    /// server keeps open, and the probe's ranged GET goes out on that same connection, which the server
    /// then drops. Before: every retry reused the dead connection again (exit 3, no GET ever answered).
    /// Now the GET is sent once more on a new connection, for free: the probe itself, which has no
    /// retries of its own, succeeds.
    @Test(arguments: [RangeResponder.KeepAlive.closeOnSecondRequest, .resetOnSecondRequest])
    func theProbesGETAfterARefusedHEADSurvivesADroppedConnection(keepAlive: RangeResponder.KeepAlive) throws {
        let body = FixtureContent.bytes(count: 1 << 20, seed: 8)
        let responder = try RangeResponder(body: body, keepAlive: keepAlive) { request, range in
            if request.hasPrefix("HEAD") { return .status("405 Method Not Allowed") }
            return .partial(extraHeaders: "ETag: \"p\"\r\nAccept-Ranges: bytes\r\n")
        }
        defer { responder.stop() }
        let pool = ConnectionPool(tlsOptions: TLSOptions(), timeouts: Timeouts())
        defer { pool.closeAll() }
        let outcome = try Probe(pool: pool, maximumRedirects: 5).run(
            responder.url("/probe"), slot: CancellationSlot())
        #expect(outcome.remote.size == Int64(body.count) && outcome.remote.acceptsRanges)
        // The probe's GET was sent on the HEAD's connection and dropped there: the stale path was taken.
        #expect(responder.droppedRequests >= 1)
    }

    /// A redirect loop on a server that drops each kept-alive connection at its second request: every
    /// hop's request first meets a dead connection. Before: "connection reset" (exit 3). Now: the loop
    /// is what is reported (exit 4, "redirects"), after the hops the redirect limit allows.
    @Test func aRedirectLoopOverDroppedConnectionsIsReportedAsALoop() async throws {
        let responder = try RangeResponder(body: [0], keepAlive: .resetOnSecondRequest) { _, _ in
            .status("302 Found", extraHeaders: "Location: /loop\r\n")
        }
        defer { responder.stop() }
        let url = responder.url("/loop")
        let result = await FaultRun.download(url, to: output, .quickRetries(0))
        _ = try FaultRun.expectError(
            result, code: .httpStatus, mentioning: [url.absoluteString, "redirects"])
        #expect(responder.droppedRequests >= 1)
        #expect(Leftovers(output).isEmpty)
    }

    /// A batch of sixty small files from one server that drops every kept-alive connection at its
    /// next request (haproxy with a 10 ms keep-alive timeout did): the files share the batch's kept
    /// connections, so most requests first meet a dead one. Before: 19 counted retries, with back-off.
    /// Now: every file, with no retry allowed at all.
    @Test(arguments: [RangeResponder.KeepAlive.closeOnSecondRequest, .resetOnSecondRequest])
    func aBatchOverDroppedKeptAliveConnectionsNeedsNoRetry(keepAlive: RangeResponder.KeepAlive) async throws {
        let body = FixtureContent.bytes(count: 20_000, seed: 9)
        let responder = try RangeResponder(body: body, keepAlive: keepAlive) { _, range in
            let headers = "ETag: \"b\"\r\nAccept-Ranges: bytes\r\n"
            return range == nil ? .whole(extraHeaders: headers) : .partial(extraHeaders: headers)
        }
        defer { responder.stop() }
        let items = (0..<60).map {
            BatchItem(url: responder.url("/file-\($0).bin"), destination: folder.url("\($0).bin"))
        }
        let outcomes = await Batch(
            items, configuration: .quickRetries(0, connections: 2), options: BatchOptions(parallelFiles: 4)
        ).run()
        #expect(outcomes.count == 60)
        for outcome in outcomes {
            #expect(outcome.error == nil, "\(outcome.item.url): \(String(describing: outcome.error))")
            #expect(outcome.report?.retries == 0)
        }
        #expect(try Data(contentsOf: folder.url("59.bin")) == Data(body))
        // The batch's requests did meet dead kept-alive connections.
        #expect(responder.droppedRequests >= 10, "dropped: \(responder.droppedRequests)")
    }

    /// Eight connections, and a file of many small windows, so that most requests go out on a
    /// connection the server is about to drop, closed or reset: many stale reuses, and a connection that
    /// just found one stale often takes another stale one from the pool next (which the fetcher's own
    /// single free retry would count), and still no retry.
    @Test(arguments: [RangeResponder.KeepAlive.closeOnSecondRequest, .resetOnSecondRequest])
    func manyStaleReusesOnEightConnectionsCostNoRetries(keepAlive: RangeResponder.KeepAlive) async throws {
        let responder = try await downloadFromAServerThatDrops(
            keepAlive, size: 4 << 20, connections: 8, minimumSegmentSize: 64 << 10)
        #expect(responder.droppedRequests >= 8, "dropped: \(responder.droppedRequests)")
    }

    /// Downloads `size` bytes from a ``RangeResponder`` that ends kept-alive connections as `keepAlive`
    /// says, and checks that every byte arrived and that no retry was counted. Returns the responder,
    /// stopped, for what it saw.
    private func downloadFromAServerThatDrops(
        _ keepAlive: RangeResponder.KeepAlive, size: Int, connections: Int, minimumSegmentSize: Int64,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> RangeResponder {
        let seed: UInt64 = 6
        let body = FixtureContent.bytes(count: size, seed: seed)
        let responder = try RangeResponder(
            body: body, keepAlive: keepAlive, largestAnswer: Int(minimumSegmentSize)
        ) { _, range in
            let headers = "ETag: \"k\"\r\nAccept-Ranges: bytes\r\n"
            return range == nil ? .whole(extraHeaders: headers) : .partial(extraHeaders: headers)
        }
        defer { responder.stop() }
        var configuration = Configuration.quickRetries(2, connections: connections)
        configuration.connections.minimumSegmentSize = minimumSegmentSize
        let report = try await FaultRun.download(
            responder.url("/keep"), to: output, configuration, sourceLocation: sourceLocation
        ).get()
        #expect(report.size == Int64(size), sourceLocation: sourceLocation)
        #expect(report.sha256 == Expected.sha256(size: size, seed: seed), sourceLocation: sourceLocation)
        #expect(try Data(contentsOf: output) == Data(body), sourceLocation: sourceLocation)
        #expect(report.retries == 0, "retries: \(report.retries)", sourceLocation: sourceLocation)
        return responder
    }

    /// An obs-fold continuation line in a header that frames nothing. Before: rejected as malformed
    /// (exit 4); curl and aria2 accept it, and now so does Fastpull (the parser's tests check the
    /// line is joined to its field).
    @Test func anObsFoldedHeaderIsAccepted() async throws {
        try await expectAccepted(
            headerLines: Array("X-Note: first part\r\n  second part\r\n\tthird part\r\n".utf8))
    }

    /// Control bytes other than NUL and CR (here 0x01 and DEL) in a header that frames nothing. Before:
    /// rejected as malformed (exit 4); curl and aria2 accept them, and now so does Fastpull. NUL and a
    /// bare CR are still refused (`ResponseHeadParserTests.badHeaderLine`).
    @Test func controlBytesInAnUnrelatedHeaderAreAccepted() async throws {
        try await expectAccepted(
            headerLines: Array("X-Odd: a".utf8) + [0x01] + Array("b".utf8) + [0x7F, 0x0D, 0x0A])
    }

    /// Downloads 4096 bytes from a server whose every answer carries `headerLines` (whole lines, with
    /// their line ends) before its `Content-Length`, and checks that they arrived.
    private func expectAccepted(
        headerLines: [UInt8], sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let body = [UInt8](FixtureContent.bytes(count: 4096, seed: 2))
        let responder = try RawResponder { request in
            let head =
                Array("HTTP/1.1 200 OK\r\n".utf8) + headerLines + Array("Content-Length: 4096\r\n\r\n".utf8)
            return .bytes(head + (request.hasPrefix("HEAD") ? [] : body))
        }
        defer { responder.stop() }
        let report = try await FaultRun.download(
            responder.url("/odd-head"), to: output, .quickRetries(0), sourceLocation: sourceLocation
        ).get()
        #expect(report.size == 4096, sourceLocation: sourceLocation)
        #expect(try Data(contentsOf: output) == Data(body), sourceLocation: sourceLocation)
    }

    /// `Transfer-Encoding: gzip, chunked`: the chunks hold gzip bytes, not the file's. Before: saved as
    /// they were, exit 0. Now: exit 4 naming the coding, nothing saved. The chunk is well framed (five
    /// bytes: gzip's magic 1F 8B and "abc") and as long as HEAD announced, and the path says nothing of
    /// gzip, so only the refusal of the coding can fail the download.
    @Test func aTransferCodingOtherThanChunkedIsRefused() async throws {
        let chunk: [UInt8] = [0x1F, 0x8B] + Array("abc".utf8)
        let responder = try RawResponder { request in
            if request.hasPrefix("HEAD") {
                return .bytes(Array("HTTP/1.1 200 OK\r\nContent-Length: \(chunk.count)\r\n\r\n".utf8))
            }
            return .bytes(
                Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n\(chunk.count)\r\n".utf8)
                    + chunk + Array("\r\n0\r\n\r\n".utf8))
        }
        defer { responder.stop() }
        let url = responder.url("/te")
        let result = await FaultRun.download(url, to: output, .quickRetries(0))
        _ = try FaultRun.expectError(
            result, code: .httpStatus, mentioning: [url.absoluteString, "transfer coding 'gzip'"])
        #expect(Leftovers(output).isEmpty, "\(Leftovers(output))")
    }

    /// A 407 from a plain-HTTP proxy. Before: blamed on the origin ("HTTP 407 … from URL"). Now the
    /// message says the proxy wants credentials, and where they go.
    @Test func aProxyAsking407IsNamedAsTheProxy() async throws {
        let proxy = try RawResponder { _ in
            .bytes(
                Array(
                    "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"p\"\r\nContent-Length: 0\r\n\r\n"
                        .utf8))
        }
        defer { proxy.stop() }
        var configuration = Configuration.quickRetries(0)
        configuration.request.proxy = .url("http://127.0.0.1:\(proxy.port)")
        let result = await FaultRun.download(server.url("/gen/4096"), to: output, configuration)
        _ = try FaultRun.expectError(
            result, code: .httpStatus,
            mentioning: ["407", "the proxy http://127.0.0.1:\(proxy.port)", "USER:PASSWORD"])
    }

    /// A proxy that refuses the connection. Before: "connection refused by 127.0.0.1:1 (URL)", as if the
    /// origin refused. Now it says it is the proxy.
    @Test func aRefusedProxyIsNamedAsTheProxy() async throws {
        var configuration = Configuration.quickRetries(0)
        let (fd, port) = try LoopbackListener.open()
        close(fd)  // nothing listens there now
        configuration.request.proxy = .url("http://127.0.0.1:\(port)")
        let result = await FaultRun.download(server.url("/gen/4096"), to: output, configuration)
        _ = try FaultRun.expectError(
            result, code: .network,
            mentioning: ["could not reach the proxy http://127.0.0.1:\(port)", "refused"])
    }

    /// A presigned URL's signature in an error. Before: printed in full, so a failure in a CI log handed
    /// out the means to fetch the object. Now the secret parameters read REDACTED.
    @Test func signaturesInURLsAreRedactedFromMessages() async throws {
        let url = server.url(
            "/missing?X-Amz-Credential=AKID&X-Amz-Signature=deadbeefcafe&X-Amz-Security-Token=tok123")
        let result = await FaultRun.download(url, to: output, .quickRetries(0))
        let error = try FaultRun.expectError(
            result, code: .httpStatus, mentioning: ["404", "X-Amz-Signature=REDACTED"])
        #expect(!error.message.contains("deadbeefcafe"))
        #expect(!error.message.contains("tok123"))
    }
}

/// HTTP dates as servers write them.
enum HTTPDateText {
    static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}

/// A loopback server of one body, with ranges, for server behaviours the fixture server has no
/// switch for: `answer` decides per request whether the whole body or the range goes back (and with
/// which extra header lines), and `keepAlive` how it treats kept-alive connections.
final class RangeResponder: Sendable {
    /// What to send back.
    enum Answer: Sendable {
        case whole(extraHeaders: String)
        case partial(extraHeaders: String)
        /// A body-less answer with this status line's code and reason ("405 Method Not Allowed").
        case status(String, extraHeaders: String = "")
    }

    /// How kept-alive connections end. The answers never say `Connection: close`.
    enum KeepAlive: Sendable, CustomTestStringConvertible {
        /// Every answer is followed by a close (the server's keep-alive timeout ran out at once).
        case closeAfterEachAnswer
        /// The first request on a connection is answered; the second is read and the connection closed
        /// without an answer, as a server whose timeout ran out just as the request arrived.
        case closeOnSecondRequest
        /// As `closeOnSecondRequest`, but the connection is reset (an RST, from a close with a zero
        /// `SO_LINGER`) instead of closed: a server or load balancer that aborts a connection it had
        /// already timed out.
        case resetOnSecondRequest

        var testDescription: String {
            switch self {
            case .closeAfterEachAnswer: "closes after each answer"
            case .closeOnSecondRequest: "closes at the second request"
            case .resetOnSecondRequest: "resets at the second request"
            }
        }
    }

    let port: Int
    private let listener: Int32
    private let ranged = Atomic<Int>(0)
    private let dropped = Atomic<Int>(0)

    /// Range requests answered so far.
    var rangedRequests: Int { ranged.load(ordering: .relaxed) }

    /// Requests read and then left without an answer, their connection closed or reset instead: each
    /// one a kept-alive connection the client reused after the server had given up on it.
    var droppedRequests: Int { dropped.load(ordering: .relaxed) }

    /// `largestAnswer`: no 206 to an open-ended range (`bytes=a-`) carries more than this many bytes
    /// (a server that caps what it sends of one).
    init(
        body: [UInt8], keepAlive: KeepAlive = .closeAfterEachAnswer, largestAnswer: Int? = nil,
        answer: @escaping @Sendable (_ request: String, _ range: ClosedRange<Int>?) -> Answer
    ) throws {
        let (fd, port) = try LoopbackListener.open(backlog: 64)
        listener = fd
        self.port = port
        Thread { [self] in
            while true {
                let connection = accept(fd, nil, nil)
                if connection < 0 {
                    if errno == EINTR { continue }
                    break
                }
                Thread { [self] in
                    serve(
                        connection, body: body, keepAlive: keepAlive, largestAnswer: largestAnswer,
                        answer: answer)
                    close(connection)
                }.start()
            }
        }.start()
    }

    deinit { stop() }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    func stop() { Glibc.shutdown(listener, Int32(SHUT_RDWR)) }

    private func serve(
        _ fd: Int32, body: [UInt8], keepAlive: KeepAlive, largestAnswer: Int?,
        answer: @Sendable (String, ClosedRange<Int>?) -> Answer
    ) {
        var pending: [UInt8] = []
        var served = 0
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            while !pending.contains(subsequence: Array("\r\n\r\n".utf8)) {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count <= 0 { return }
                pending += buffer[..<count]
            }
            let end = pending.firstRange(of: Array("\r\n\r\n".utf8))!.upperBound
            let request = String(decoding: pending[..<end], as: UTF8.self)
            pending.removeFirst(end)
            if served >= 1 && keepAlive != .closeAfterEachAnswer {
                dropped.add(1, ordering: .relaxed)
                if keepAlive == .resetOnSecondRequest { Self.resetOnClose(fd) }
                return
            }
            served += 1
            let range = Self.range(in: request, size: body.count)
            var head: String
            var payload: ArraySlice<UInt8>
            switch answer(request, range) {
            case .whole(let extra):
                head = "HTTP/1.1 200 OK\r\n\(extra)Content-Length: \(body.count)\r\n\r\n"
                payload = body[...]
            case .partial(let extra):
                var range = range ?? 0...(body.count - 1)
                let openEnded =
                    request.range(of: "\r\nRange: bytes=[0-9]+-\r\n", options: .regularExpression) != nil
                if let largestAnswer, openEnded, range.count > largestAnswer {
                    range = range.lowerBound...(range.lowerBound + largestAnswer - 1)
                }
                ranged.add(1, ordering: .relaxed)
                head =
                    "HTTP/1.1 206 Partial Content\r\n\(extra)Content-Range: bytes \(range.lowerBound)-\(range.upperBound)/\(body.count)\r\n"
                    + "Content-Length: \(range.count)\r\n\r\n"
                payload = body[range]
            case .status(let status, let extra):
                head = "HTTP/1.1 \(status)\r\n\(extra)Content-Length: 0\r\n\r\n"
                payload = []
            }
            if request.hasPrefix("HEAD") { payload = [] }
            guard Self.send(fd, Array(head.utf8) + payload) else { return }
            if keepAlive == .closeAfterEachAnswer {
                Glibc.shutdown(fd, Int32(SHUT_WR))
                while buffer.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, 0) }) > 0 {}
                return
            }
        }
    }

    private static func range(in request: String, size: Int) -> ClosedRange<Int>? {
        guard
            let line = request.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("range:") }),
            let equals = line.firstIndex(of: "=")
        else { return nil }
        let parts = line[line.index(after: equals)...].split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let first = Int(parts[0]) else { return nil }
        let last = Int(parts[1]) ?? size - 1
        return first...min(last, size - 1)
    }

    private static func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            }
            if count <= 0 { return false }
            sent += count
        }
        return true
    }

    /// Makes the coming `close` of `fd` reset the connection (an RST) instead of closing it in order
    /// (a FIN): lingering on, for zero seconds.
    private static func resetOnClose(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        let set = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        precondition(set == 0, "SO_LINGER: \(String(cString: strerror(errno)))")
    }
}

/// The request heads a scripted server received, in the order they arrived, for tests that check what
/// was asked and how often.
final class RequestLog: Sendable {
    private let heads = Mutex<[String]>([])

    /// Adds a request head, as text.
    func record(_ head: String) { heads.withLock { $0.append(head) } }

    /// Every head so far.
    var all: [String] { heads.withLock { $0 } }

    /// The request line of every head so far (`GET /path HTTP/1.1`).
    var requestLines: [String] { all.map { String($0.prefix { !$0.isNewline }) } }
}

extension Array where Element == UInt8 {
    fileprivate func contains(subsequence: [UInt8]) -> Bool { firstRange(of: subsequence) != nil }
}
