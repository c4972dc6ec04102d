import FastpullFixtures
import Foundation
import Glibc
import Synchronization
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP
@testable import FastpullNet

/// The fault matrix: every way a server, the network or the disk can fail a download, each asserting
/// the error code, that the message names the URL or path and the cause, that the output path holds no
/// unverified bytes, and whether `<out>.part` and its journal `<out>.part.fastpull` stay resumable.
///
/// Faults the fixture server has a switch for use it; the others (protocol violations, huge heads, a
/// slowloris) use ``RawResponder``, a loopback socket that answers with canned bytes. Every download
/// runs under a watchdog (``FaultRun``) so that a hang fails the test instead of stalling the suite.
@Suite("Fault matrix", .timeLimit(.minutes(10)))
struct FaultMatrixTests {
    let server: FixtureServer
    let files = TemporaryFolder()
    let folder = TemporaryFolder()

    init() throws {
        var configuration = FixtureServer.Configuration()
        configuration.filesDirectory = files.path
        server = try FixtureServer(configuration)
    }

    var output: URL { folder.url("out.bin") }

    /// Fixed connections and 5 ms retries, so failing downloads end fast.
    func configuration(connections: Int = 2, retries: Int = 2) -> Configuration {
        Configuration(connections: .fixed(connections)).with {
            $0.retries.limit = retries
            $0.retries.baseDelay = .milliseconds(5)
        }
    }

    // MARK: - Resets and short bodies

    /// Reset at a random byte → exit 3 with the bytes before the reset kept → resumable: the next run
    /// resumes from them and finishes.
    @Test func resetAtARandomByteKeepsWhatArrivedAndResumes() async throws {
        let size = (1 << 20) + 12_345
        let cut = Int.random(in: 20_000...300_000)
        let url = server.url("/gen/\(size)?drop-after=\(cut)&drops=1000")
        // No retries: the reset ends the connection's work (after the pipeline's replacement rounds).
        let failed = await FaultRun.download(url, to: output, configuration(connections: 1, retries: 0))
        let error = try FaultRun.expectError(
            failed, code: .network, mentioning: [url.absoluteString, "closed"])
        #expect(error.remedy == .resume, "cut at \(cut): \(error)")
        #expect(error.message.contains("saved in \(output.path).part"), "cut at \(cut): \(error.message)")
        let left = Leftovers(output)
        #expect(!left.output)
        #expect(left.resumable, "cut at \(cut): \(left)")
        #expect(left.keptBytes > 0, "cut at \(cut): \(left)")

        // The next run resumes: each response still breaks after `cut` bytes, but each is progress.
        let resumed = await FaultRun.download(url, to: output, configuration(connections: 2, retries: 3))
        let report = try resumed.get()
        #expect(report.resumedBytes == left.keptBytes)
        // The run's speed counts what it fetched, not the bytes it kept.
        #expect(report.bytesPerSecond == Double(Int64(size) - report.resumedBytes) / report.seconds)
        #expect(try Data(contentsOf: output) == Data(FixtureContent.bytes(count: size, seed: 1)))
        #expect(Leftovers(output).onlyOutput)
    }

    /// A connection reset on every response before any byte → exit 3 → nothing saved, so nothing left
    /// (no `.part` the size of the file, no journal claiming a resumable download of 0 bytes).
    @Test func resetBeforeAnyByteGivesUpAsANetworkError() async throws {
        let url = server.url("/gen/\(2 << 20)?drop-after=0&drops=100000")
        let result = await FaultRun.download(url, to: output, configuration(retries: 1))
        let error = try FaultRun.expectError(
            result, code: .network, mentioning: [url.absoluteString, "closed"])
        #expect(error.remedy == nil && !"\(error)".contains("resume"), "\(error)")
        #expect(Leftovers(output).isEmpty, "\(Leftovers(output))")
    }

    /// Body shorter than Content-Length on the single-stream path (no ranges) → exit 3 → nothing left:
    /// without ranges there is nothing to resume.
    @Test func shortBodyWithoutRangesLeavesNothing() async throws {
        try await shortBodyWithoutRanges(retries: 0)
    }

    /// The same with retries: every retry starts from zero, so a try that got some bytes is no progress
    /// and must still count against the budget.
    @Test
    func shortBodyWithoutRangesGivesUpAfterTheRetries() async throws {
        try await shortBodyWithoutRanges(retries: 2)
    }

    private func shortBodyWithoutRanges(retries: Int) async throws {
        let url = server.url("/gen/\(1 << 20)?no-ranges=1&drop-after=5000&drops=100000")
        let result = await FaultRun.download(url, to: output, configuration(retries: retries))
        _ = try FaultRun.expectError(result, code: .network, mentioning: [url.absoluteString, "closed"])
        #expect(Leftovers(output).isEmpty, "\(Leftovers(output))")
    }

    /// Body longer than Content-Length → the bytes past the declared length are not body: exit 0 with
    /// exactly the declared bytes.
    @Test func bodyLongerThanContentLengthKeepsOnlyTheDeclaredBytes() async throws {
        let body = Array("0123456789".utf8)
        let responder = try RawResponder { _ in
            .bytes(
                Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n".utf8) + body + body
            )
        }
        defer { responder.stop() }
        let result = await FaultRun.download(responder.url("/x"), to: output, configuration(retries: 0))
        let report = try result.get()
        #expect(report.size == 10)
        #expect(try Data(contentsOf: output) == Data(body))
    }

    // MARK: - Stalls

    /// A stall mid-body → the scheduler gives the stalled range to a new connection → exit 0.
    @Test func stallMidBodyIsReplacedAndFinishes() async throws {
        let size = 2 << 20
        let url = server.url("/gen/\(size)?stall-after=100000&stalls=2")
        var configuration = configuration(retries: 2)
        configuration.timeouts.stall = .milliseconds(300)
        let report = try await FaultRun.download(url, to: output, configuration).get()
        #expect(report.sha256 == Expected.sha256(size: size))
        #expect(Leftovers(output).onlyOutput)
    }

    /// Every response stalls before its first byte → replacing stalled connections must not go on
    /// forever: exit 3 once the retry budget is spent → nothing saved, nothing left.
    @Test
    func stallForeverEndsWithinTheRetryBudget() async throws {
        let url = server.url("/gen/\(2 << 20)?stall-after=0&stalls=100000")
        var configuration = configuration(retries: 1)
        configuration.timeouts.stall = .milliseconds(200)
        configuration.timeouts.idle = .seconds(1)
        let result = await FaultRun.download(url, to: output, configuration)
        _ = try FaultRun.expectError(result, code: .network, mentioning: [url.absoluteString])
        #expect(Leftovers(output).isEmpty, "\(Leftovers(output))")
    }

    /// A stall on the single-stream path (no ranges) → the idle timeout ends the try → exit 3 → nothing
    /// left.
    @Test func stallWithoutRangesTimesOut() async throws {
        try await stallWithoutRanges(retries: 0)
    }

    /// The same with retries, which must end too (see ``shortBodyWithoutRangesGivesUpAfterTheRetries()``).
    @Test
    func stallWithoutRangesGivesUpAfterTheRetries() async throws {
        try await stallWithoutRanges(retries: 2)
    }

    private func stallWithoutRanges(retries: Int) async throws {
        let url = server.url("/gen/\(1 << 20)?no-ranges=1&stall-after=1000&stalls=100000")
        var configuration = configuration(retries: retries)
        configuration.timeouts.idle = .milliseconds(300)
        let result = await FaultRun.download(url, to: output, configuration)
        _ = try FaultRun.expectError(result, code: .network, mentioning: [url.absoluteString, "timed out"])
        #expect(Leftovers(output).isEmpty, "\(Leftovers(output))")
    }

    // MARK: - Error statuses

    /// A burst of 503s shorter than the retry budget → retried → exit 0.
    @Test func shortBurstOf503IsRetried() async throws {
        let size = 1 << 20
        let url = server.url("/gen/\(size)?status=503&statuses=3")
        let report = try await FaultRun.download(url, to: output, configuration(retries: 4)).get()
        #expect(report.retries >= 3)
        #expect(report.sha256 == Expected.sha256(size: size))
    }

    /// A burst of 503s longer than the retry budget → exit 4 naming the status → nothing left (the
    /// probe never got an answer, so nothing was created).
    @Test func longBurstOf503Fails() async throws {
        let url = server.url("/gen/\(1 << 20)?status=503&statuses=1000")
        let result = await FaultRun.download(url, to: output, configuration(retries: 2))
        let error = try FaultRun.expectError(
            result, code: .httpStatus, mentioning: [url.absoluteString, "503"])
        #expect(error.httpStatus == 503)
        #expect(error.url == url)
        #expect(Leftovers(output).isEmpty)
        #expect(server.stats.requests == 3)
    }

    /// 429 with `Retry-After: 1` → waits at least the second asked for → exit 0.
    @Test func retryAfterInSecondsIsHonoured() async throws {
        let size = 100_000
        let url = server.url("/gen/\(size)?status=429&statuses=1&retry-after=1")
        let clock = ContinuousClock()
        let started = clock.now
        let report = try await FaultRun.download(url, to: output, configuration(retries: 2)).get()
        // A lower bound on a deliberate wait, not a speed assertion: the retry came after the pause.
        #expect(clock.now - started >= .seconds(1))
        #expect(report.retries == 1)
        #expect(report.sha256 == Expected.sha256(size: size))
    }

    /// A server that drips its bytes (200 a second, every connection) against a lowest speed of 10 kB/s
    /// over a second → exit 3 saying it was too slow. Before: a dripping server kept every connection
    /// alive, and the download never ended.
    @Test func aDrippingServerStopsAtTheLowestSpeed() async throws {
        let url = server.url("/gen/\(2 << 20)?rate=200")
        var configuration = configuration(retries: 1)
        configuration.timeouts.lowestSpeed = LowestSpeed(bytesPerSecond: 10_000, duration: .seconds(1))
        let result = await FaultRun.download(url, to: output, configuration)
        _ = try FaultRun.expectError(result, code: .network, mentioning: [url.absoluteString, "slower than"])
        #expect(!FileManager.default.fileExists(atPath: output.path))
    }

    /// A rate limit of the download's own lowers the floor to a quarter of it: a download held at
    /// 4 kB/s is not stopped by a 100 kB/s lowest speed.
    @Test func aRateLimitIsNoReasonToStop() async throws {
        let size = 8_000
        var configuration = configuration(connections: 1, retries: 0)
        configuration.connections.maximumBytesPerSecond = 4_000
        configuration.timeouts.lowestSpeed = LowestSpeed(
            bytesPerSecond: 100_000, duration: .milliseconds(500))
        let report = try await FaultRun.download(server.url("/gen/\(size)"), to: output, configuration).get()
        #expect(report.sha256 == Expected.sha256(size: size))
    }

    /// While the download waits for a retry, its progress says which retry, why and how long: before,
    /// a display showed `0 B/s 0 conn` for as long as a `Retry-After` lasted. The wait over, it is gone.
    @Test func aWaitForARetryIsVisibleInTheProgress() async throws {
        let size = 100_000
        let url = server.url("/gen/\(size)?status=503&statuses=1&retry-after=3")
        let download = Download(from: url, to: output, configuration: configuration(retries: 4))
        let run = FaultRun(download)
        var seen: TransferProgress.Retry?
        let deadline = ContinuousClock.now + .seconds(20)
        while seen == nil, ContinuousClock.now < deadline {
            seen = download.progress.waitingToRetry
            if seen == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        let retry = try #require(seen)
        #expect(retry.attempt == 1)
        #expect(retry.retries == 4)
        #expect(retry.reason.contains("503"), "\(retry.reason)")
        #expect(retry.secondsLeft > 0 && retry.secondsLeft <= 3)
        let report = try await run.result().get()
        #expect(report.sha256 == Expected.sha256(size: size))
        #expect(download.progress.waitingToRetry == nil)
    }

    /// 429 with `Retry-After: 1` on a kept-alive connection that the server closes during the wait →
    /// the retry finds it closed, which is no failure of the server's: one retry counted, exit 0.
    @Test func aConnectionClosedDuringRetryAfterIsNoExtraFailure() async throws {
        let body = Array("0123456789".utf8)
        let requests = Atomic<Int>(0)
        let responder = try RawResponder { _ in
            // The first answer keeps the connection alive in its headers, then the server closes it.
            if requests.add(1, ordering: .relaxed).newValue == 1 {
                return .bytes(
                    Array(
                        "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n".utf8))
            }
            return .bytes(
                Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n".utf8) + body)
        }
        defer { responder.stop() }
        let report = try await FaultRun.download(responder.url("/x"), to: output, configuration(retries: 2))
            .get()
        #expect(report.retries == 1)
        #expect(try Data(contentsOf: output) == Data(body))
    }

    /// 429 with `Retry-After` as an HTTP-date two seconds ahead → waits until then (at least one
    /// second, the date having one-second resolution) → exit 0.
    @Test func retryAfterAsAnHTTPDateIsHonoured() async throws {
        let size = 100_000
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let date = formatter.string(from: Date().addingTimeInterval(2))
        let encoded = try #require(date.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        let url = server.url("/gen/\(size)?status=429&statuses=1&retry-after=\(encoded)")
        let clock = ContinuousClock()
        let started = clock.now
        let report = try await FaultRun.download(url, to: output, configuration(retries: 2)).get()
        #expect(clock.now - started >= .seconds(1), "Retry-After: \(date)")
        #expect(report.sha256 == Expected.sha256(size: size))
    }

    /// `Retry-After` is honoured up to 60 seconds, never longer.
    @Test func retryAfterIsCappedAtSixtySeconds() throws {
        let policy = RetryPolicy(baseDelay: .milliseconds(5))
        let hour = try #require(RetryAfter.parse("3600"))
        #expect(policy.delay(attempt: 1, retryAfter: hour) == .seconds(60))
        let nextYear = RetryAfter.parse("Thu, 01 Jan 2099 00:00:00 GMT")
        #expect(nextYear.map { policy.delay(attempt: 1, retryAfter: $0) } == .seconds(60))
    }

    // MARK: - Range violations

    /// 206 whose Content-Range is not the range asked for → exit 4 naming Content-Range → no byte of
    /// it written → nothing saved, so nothing left behind (before: a preallocated `.part` the size of
    /// the file and a journal saying "0 of N bytes are saved").
    @Test func wrongContentRangeIsNeverWritten() async throws {
        let url = server.url("/gen/\(2 << 20)?bad-range=1")
        let result = await FaultRun.download(url, to: output, configuration(retries: 1))
        let error = try FaultRun.expectError(
            result, code: .httpStatus, mentioning: [url.absoluteString, "Content-Range"])
        #expect(error.remedy == nil && !"\(error)".contains("resume"), "\(error)")
        #expect(Leftovers(output).isEmpty, "\(Leftovers(output))")
    }

    /// HEAD promises ranges, then a 429 storm never lets a byte through → exit 4 after the retries →
    /// nothing left (before: a preallocated `.part` the size of the file and its journal).
    @Test func aRefusalStormThatSavedNothingLeavesNothing() async throws {
        let responder = try RawResponder { request in
            if request.hasPrefix("HEAD") {
                let head =
                    "HTTP/1.1 200 OK\r\nContent-Length: \(2 << 20)\r\nAccept-Ranges: bytes\r\nETag: \"s\"\r\n"
                    + "Connection: close\r\n\r\n"
                return .bytes(Array(head.utf8))
            }
            let refusal =
                "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            return .bytes(Array(refusal.utf8))
        }
        defer { responder.stop() }
        let url = responder.url("/storm")
        let result = await FaultRun.download(url, to: output, configuration(retries: 1))
        _ = try FaultRun.expectError(result, code: .httpStatus, mentioning: [url.absoluteString, "429"])
        #expect(Leftovers(output).isEmpty, "\(Leftovers(output))")
    }

    /// 200 to every request (no ranges, from the probe on) → one streaming connection → exit 0.
    @Test func serverWithoutRangesIsStreamed() async throws {
        let size = (1 << 20) + 7
        let report = try await FaultRun.download(
            server.url("/gen/\(size)?no-ranges=1"), to: output, configuration(connections: 4)
        ).get()
        #expect(!report.rangesSupported)
        #expect(report.sha256 == Expected.sha256(size: size))
    }

    /// The probe promises ranges (HEAD with Accept-Ranges and a strong ETag), then every ranged GET gets
    /// a 200 with the whole file and the same ETag: the file did not change, the server just does not
    /// serve ranges (curl and aria2c save it) → that body is the file, over one connection → exit 0.
    /// Before: exit 5 in a tenth of a second.
    @Test func wholeFileOfTheSameVersionWhereARangeWasAskedIsStreamed() async throws {
        let body = [UInt8](repeating: 0x61, count: 4096)
        let responder = try RawResponder { request in
            let head =
                "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\nAccept-Ranges: bytes\r\nETag: \"v1\"\r\n"
                + "Connection: close\r\n\r\n"
            return .bytes(Array(head.utf8) + (request.hasPrefix("HEAD") ? [] : body))
        }
        defer { responder.stop() }
        let url = responder.url("/ranges-then-not")
        let report = try await FaultRun.download(url, to: output, configuration(retries: 1)).get()
        #expect(!report.rangesSupported)
        #expect(try Data(contentsOf: output) == Data(body))
        #expect(Leftovers(output).onlyOutput)
    }

    /// The same answer with another ETag than the probe's: the file did change → starts over, twice,
    /// then exit 5 → nothing left (the bytes belong to no version the download could pin).
    @Test func wholeFileOfAnotherVersionIsARemoteChange() async throws {
        let body = [UInt8](repeating: 0x61, count: 4096)
        let responder = try RawResponder { request in
            let etag = request.hasPrefix("HEAD") ? "\"v1\"" : "\"v2\""
            let head =
                "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\nAccept-Ranges: bytes\r\nETag: \(etag)\r\n"
                + "Connection: close\r\n\r\n"
            return .bytes(Array(head.utf8) + (request.hasPrefix("HEAD") ? [] : body))
        }
        defer { responder.stop() }
        let url = responder.url("/changed")
        let result = await FaultRun.download(url, to: output, configuration(retries: 1))
        _ = try FaultRun.expectError(
            result, code: .remoteChanged, mentioning: [url.absoluteString, "changing"])
        #expect(Leftovers(output).isEmpty, "\(Leftovers(output))")
    }

    /// Same without any validator (no If-Range sent): nothing says the whole file is another version →
    /// it is taken as the file, over one connection → exit 0.
    @Test func wholeFileWhereARangeWasAskedWithoutValidatorIsStreamed() async throws {
        let body = [UInt8](repeating: 0x62, count: 4096)
        let responder = try RawResponder { request in
            let head =
                "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\nAccept-Ranges: bytes\r\nConnection: close\r\n\r\n"
            return .bytes(Array(head.utf8) + (request.hasPrefix("HEAD") ? [] : body))
        }
        defer { responder.stop() }
        let url = responder.url("/no-validator")
        let report = try await FaultRun.download(url, to: output, configuration(retries: 1)).get()
        #expect(!report.rangesSupported)
        #expect(try Data(contentsOf: output) == Data(body))
        #expect(Leftovers(output).onlyOutput)
    }

    // MARK: - Malformed responses (raw responder)

    /// A chunked body cut off mid-chunk → exit 3 → nothing left.
    @Test func truncatedChunkedBody() async throws {
        try await truncatedChunked(retries: 0)
    }

    /// The same with retries, which must end too (see ``shortBodyWithoutRangesGivesUpAfterTheRetries()``).
    @Test
    func truncatedChunkedBodyGivesUpAfterTheRetries() async throws {
        try await truncatedChunked(retries: 2)
    }

    private func truncatedChunked(retries: Int) async throws {
        let responder = try RawResponder { _ in
            .bytes(
                Array(
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhel".utf8)
            )
        }
        defer { responder.stop() }
        let url = responder.url("/truncated-chunked")
        let result = await FaultRun.download(url, to: output, configuration(retries: retries))
        _ = try FaultRun.expectError(result, code: .network, mentioning: [url.absoluteString, "closed"])
        #expect(Leftovers(output).isEmpty, "\(Leftovers(output))")
    }

    /// A chunk-size line that is not hexadecimal → exit 4 naming the chunk size → nothing left.
    @Test func badChunkSizeLine() async throws {
        let responder = try RawResponder { _ in
            .bytes(
                Array(
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\nabc".utf8
                ))
        }
        defer { responder.stop() }
        let url = responder.url("/bad-chunk")
        let result = await FaultRun.download(url, to: output, configuration(retries: 1))
        _ = try FaultRun.expectError(
            result, code: .httpStatus, mentioning: [url.absoluteString, "chunk size"])
        #expect(Leftovers(output).isEmpty, "\(Leftovers(output))")
    }

    /// Something that is not HTTP → exit 4 naming the status line → nothing left.
    @Test func garbageStatusLine() async throws {
        let responder = try RawResponder { _ in .bytes(Array("SSH-2.0-OpenSSH_9.2\r\n\r\n".utf8)) }
        defer { responder.stop() }
        let url = responder.url("/garbage")
        let result = await FaultRun.download(url, to: output, configuration(retries: 0))
        _ = try FaultRun.expectError(
            result, code: .httpStatus, mentioning: [url.absoluteString, "status line"])
        #expect(Leftovers(output).isEmpty)
    }

    /// A 1 MB response head → refused at the 64 KiB limit → exit 4 → nothing left.
    @Test func oneMegabyteResponseHead() async throws {
        let padding = "X-Padding: " + String(repeating: "a", count: 1000) + "\r\n"
        let head =
            "HTTP/1.1 200 OK\r\n" + String(repeating: padding, count: 1000) + "Content-Length: 0\r\n\r\n"
        let bytes = Array(head.utf8)
        let responder = try RawResponder { _ in .bytes(bytes) }
        defer { responder.stop() }
        let url = responder.url("/huge-head")
        let result = await FaultRun.download(url, to: output, configuration(retries: 0))
        _ = try FaultRun.expectError(
            result, code: .httpStatus, mentioning: [url.absoluteString, "too large"])
        #expect(Leftovers(output).isEmpty)
    }

    /// 100,000 header fields → refused at 256 → exit 4 → nothing left.
    @Test func oneHundredThousandHeaders() async throws {
        let head = "HTTP/1.1 200 OK\r\n" + String(repeating: "A: b\r\n", count: 100_000) + "\r\n"
        let bytes = Array(head.utf8)
        let responder = try RawResponder { _ in .bytes(bytes) }
        defer { responder.stop() }
        let url = responder.url("/many-headers")
        let result = await FaultRun.download(url, to: output, configuration(retries: 0))
        _ = try FaultRun.expectError(result, code: .httpStatus, mentioning: [url.absoluteString, "too many"])
        #expect(Leftovers(output).isEmpty)
    }

    /// A server that sends its head one byte a second never trips the idle timeout; the download must
    /// still end: exit 3 → nothing left.
    @Test func slowlorisServerIsCutOff() async throws {
        let head = Array("HTTP/1.1 200 OK\r\nX-Slow: ".utf8) + [UInt8](repeating: 0x61, count: 100_000)
        let responder = try RawResponder { _ in .trickle(head, interval: .seconds(1)) }
        defer { responder.stop() }
        let url = responder.url("/slowloris")
        var configuration = configuration(retries: 0)
        configuration.timeouts.idle = .seconds(2)
        let result = await FaultRun.download(url, to: output, configuration)
        _ = try FaultRun.expectError(result, code: .network, mentioning: [url.absoluteString, "timed out"])
        #expect(Leftovers(output).isEmpty)
    }

    /// A connection whose response head failed (malformed, or a read timeout midway) holds an unknown
    /// rest of that response: it must never go back to the pool, where a retry would take it and read
    /// the old response's bytes as the answer to its own request.
    @Test(
        arguments: [
            ScriptedTransport.Step.bytes(Array("HTTP/1.1 200 OK\r\nBad header\r\n\r\n".utf8)),
            ScriptedTransport.Step.bytes(Array("HTTP/1.1 200 OK\r\nContent-".utf8)),
        ])
    func aConnectionWhoseHeadFailedIsNotReused(first: ScriptedTransport.Step) throws {
        let url = try #require(URL(string: "http://127.0.0.1:9/x"))
        let origin = try #require(Origin(url))
        let transport = ScriptedTransport([first, .fail(NetError.timeout("read"))])
        let connection = HTTPConnection(origin: origin, transport: transport)
        let pool = ConnectionPool(tlsOptions: TLSOptions(), timeouts: Timeouts())
        defer { pool.closeAll() }
        #expect(throws: (any Error).self) { _ = try connection.readHead() }
        #expect(!connection.isReusable)
        pool.giveBack(connection)
        // The next request to the origin must get a fresh connection (port 9 is refused), not this one.
        let next = try? pool.connection(to: origin)
        #expect(next !== connection)
    }

    // MARK: - Redirects

    /// A redirect to itself → exit 4 after the redirect limit → nothing left.
    @Test func redirectLoop() async throws {
        let url = server.url("/redirect-loop")
        let result = await FaultRun.download(url, to: output, configuration())
        _ = try FaultRun.expectError(
            result, code: .httpStatus, mentioning: [url.absoluteString, "redirects"])
        #expect(Leftovers(output).isEmpty)
        #expect(server.stats.requests == 11)
    }

    /// A redirect to `ftp://` → exit 4 naming the target → nothing left.
    @Test func redirectToAnUnsupportedScheme() async throws {
        let url = server.url("/redirect-to?url=ftp%3A%2F%2F127.0.0.1%2Ffile.bin")
        let result = await FaultRun.download(url, to: output, configuration())
        _ = try FaultRun.expectError(
            result, code: .httpStatus, mentioning: [url.absoluteString, "ftp://127.0.0.1/file.bin"])
        #expect(Leftovers(output).isEmpty)
    }

    /// An https URL that redirects to plain http → refused (a downgrade exposes the download to anyone
    /// on the path) → exit 4 → nothing left, and the http server never asked. (Needs the probe's
    /// downgrade check, `Configuration.request.allowsInsecureRedirects`.)
    @Test func httpsToHTTPDowngradeIsRefused() async throws {
        var tls = FixtureServer.Configuration()
        tls.tls = true
        let secure = try FixtureServer(tls)
        let target = server.url("/gen/1000").absoluteString
        let encoded = try #require(target.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        let url = secure.url("/redirect-to?url=\(encoded)")
        var configuration = configuration()
        configuration.tls.caFile = FixturePaths.certificatesDirectory + "/ca.pem"
        let result = await FaultRun.download(url, to: output, configuration)
        _ = try FaultRun.expectError(result, code: .httpStatus, mentioning: [url.absoluteString, target])
        #expect(Leftovers(output).isEmpty)
        #expect(server.stats.requests == 0)
    }

    // MARK: - The remote file changes

    /// The file is replaced (new ETag, same or another size) between two requests of the download,
    /// restarting not allowed → exit 5 → `.part` and journal removed (their bytes belong to the old
    /// version). Every response breaks after 512 KiB, so a request is sure to follow the change, which
    /// a thread of its own makes the moment 256 KiB are written (a busy pool cannot make it late).
    @Test(arguments: [false, true])
    func remoteFileChangesBetweenRequests(sizeChanges: Bool) async throws {
        let size = 4 << 20
        let path = URL(fileURLWithPath: files.path).appendingPathComponent("changing.bin")
        try Data(FixtureContent.bytes(count: size, seed: 1)).write(to: path)
        let url = server.url("/files/changing.bin?rate=1000000&drop-after=524288&drops=1000")
        var configuration = configuration(connections: 1, retries: 3)
        configuration.resume.restartsWhenRemoteChanges = false
        let run = FaultRun(Download(from: url, to: output, configuration: configuration))
        let replacement = Data(FixtureContent.bytes(count: sizeChanges ? size + 1 : size, seed: 2))
        // Replaced as deployments do (a new file renamed over the old), so each response is one version.
        let replaced = await run.download.whenWritten(atLeast: 256 << 10) {
            try? replacement.write(to: path, options: .atomic)
        }
        #expect(replaced, "the download never got going")
        let result = await run.result()
        _ = try FaultRun.expectError(
            result, code: .remoteChanged, mentioning: [url.absoluteString, "changed"])
        #expect(Leftovers(output).isEmpty, "\(Leftovers(output))")
    }

    // MARK: - Network

    /// Connection refused → exit 3 naming host and cause → nothing left. Retried only twice, 0.1 s
    /// apart, whatever the retry budget: before, five retries with back-off took 4.6 s to say so.
    @Test func connectionRefused() async throws {
        // Port 1 (tcpmux) has no listener here; a stopped server's port could be taken over by a
        // server of a test running in parallel.
        let url = try #require(URL(string: "http://127.0.0.1:1/gen/10"))
        let download = Download(from: url, to: output, configuration: configuration(retries: 5))
        let result = await FaultRun(download).result()
        let error = try FaultRun.expectError(
            result, code: .network, mentioning: [url.absoluteString, "refused"])
        #expect(download.progress.retries == RetryPolicy.refusedRetries)
        // The details a build tool needs, without reading the message.
        #expect(error.systemError == ECONNREFUSED)
        #expect(error.url == url)
        #expect(error.httpStatus == nil)
        #expect(Leftovers(output).isEmpty)
    }

    /// A host name that cannot resolve (`.invalid` is reserved, RFC 6761) → exit 3 naming the host →
    /// nothing left, and no retry: a name that does not exist is not asked for again (before, the
    /// retries took 5.2 s).
    @Test func dnsFailure() async throws {
        let url = try #require(URL(string: "http://fastpull-test.invalid/file.bin"))
        let download = Download(from: url, to: output, configuration: configuration(retries: 5))
        let result = await FaultRun(download).result()
        _ = try FaultRun.expectError(
            result, code: .network, mentioning: [url.absoluteString, "fastpull-test.invalid"])
        #expect(download.progress.retries == 0)
        #expect(Leftovers(output).isEmpty)
    }

    // MARK: - Local disk

    /// Output folder missing → exit 7 naming the folder, before any request → nothing created.
    @Test func outputFolderMissing() async throws {
        let missing = folder.url("no/such/folder/out.bin")
        let result = await FaultRun.download(server.url("/gen/10"), to: missing, configuration())
        _ = try FaultRun.expectError(
            result, code: .localIO, mentioning: [folder.path + "/no/such/folder", "does not exist"])
        #expect(server.stats.requests == 0)
    }

    /// Output folder read-only (a read-only bind mount, since root ignores permission bits) → exit 7
    /// naming the `.part` path and the cause → nothing created.
    @Test(.enabled(if: Mounts.available, "needs root with mount(2)"))
    func outputFolderReadOnly() async throws {
        let mount = try Mounts.readOnlyBind(folder.path + "/ro")
        defer { mount.unmount() }
        let target = URL(fileURLWithPath: mount.path).appendingPathComponent("out.bin")
        let result = await FaultRun.download(server.url("/gen/\(1 << 20)"), to: target, configuration())
        _ = try FaultRun.expectError(
            result, code: .localIO, mentioning: [target.path + ".part", "Read-only"])
        #expect(Leftovers(target).isEmpty)
    }

    /// Disk full (a 4 MiB tmpfs), ranged: the free-space check (tmpfs) or preallocation fails before any
    /// byte is fetched → exit 7 with the hint to free space → nothing left.
    @Test(.enabled(if: Mounts.available, "needs root with mount(2)"))
    func diskFullWithRanges() async throws {
        let mount = try Mounts.tmpfs(folder.path + "/small", megabytes: 4)
        defer { mount.unmount() }
        let target = URL(fileURLWithPath: mount.path).appendingPathComponent("out.bin")
        let result = await FaultRun.download(server.url("/gen/\(8 << 20)"), to: target, configuration())
        _ = try FaultRun.expectError(
            result, code: .localIO, mentioning: [mount.path, "free some space", "8.0 MiB"])
        #expect(Leftovers(target).isEmpty, "\(Leftovers(target))")
    }

    /// Disk full once the download runs: the file's 4 MiB fit a 4 MiB tmpfs by the free-space check
    /// (tmpfs is not preallocated), but not with the journal beside it, so a write fails late → exit 7
    /// with the hint → either the bytes saved so far are kept with a journal that resumes them, or,
    /// with nothing saved, nothing is left to hold the space.
    @Test(
        .enabled(if: Mounts.available, "needs root with mount(2)")
    )
    func diskFullOnceTheDownloadRuns() async throws {
        let mount = try Mounts.tmpfs(folder.path + "/small", megabytes: 4)
        defer { mount.unmount() }
        let target = URL(fileURLWithPath: mount.path).appendingPathComponent("out.bin")
        let result = await FaultRun.download(server.url("/gen/\(4 << 20)"), to: target, configuration())
        _ = try FaultRun.expectError(
            result, code: .localIO, mentioning: [target.path + ".part", "free some space"])
        let left = Leftovers(target)
        #expect(!left.output)
        #expect(left.isEmpty || (left.resumable && left.keptBytes > 0), "\(left)")
    }

    /// Disk full (a 4 MiB tmpfs), streaming without ranges: a write fails mid-body → exit 7 with the hint
    /// → nothing left, the space given back.
    @Test(.enabled(if: Mounts.available, "needs root with mount(2)"))
    func diskFullWhileStreaming() async throws {
        let mount = try Mounts.tmpfs(folder.path + "/small", megabytes: 4)
        defer { mount.unmount() }
        let target = URL(fileURLWithPath: mount.path).appendingPathComponent("out.bin")
        let url = server.url("/gen/\(8 << 20)?chunked=1&no-ranges=1")
        let result = await FaultRun.download(url, to: target, configuration())
        _ = try FaultRun.expectError(
            result, code: .localIO, mentioning: [target.path + ".part", "free some space"])
        #expect(Leftovers(target).isEmpty, "\(Leftovers(target))")
    }
}

// MARK: - Helpers

/// A download run under a watchdog: a download that has not ended after the limit is cancelled and
/// recorded as a hang, so a broken timeout fails one test instead of stalling the whole suite.
struct FaultRun {
    let download: Download
    private let task: Task<Report, any Error>

    init(_ download: Download) {
        self.download = download
        task = Task { try await download.run() }
    }

    /// Runs a download of `url` to `file` to its end.
    static func download(
        _ url: URL, to file: URL, _ configuration: Configuration, within limit: Duration = .seconds(30),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> Result<Report, any Error> {
        await FaultRun(Download(from: url, to: file, configuration: configuration))
            .result(within: limit, sourceLocation: sourceLocation)
    }

    /// How many times longer every bound is: `FASTPULL_TEST_TIME_SCALE` (scripts/sanitizers.sh sets it,
    /// since sanitizers slow everything down), else 1.
    static let timeScale: Int = {
        let value = ProcessInfo.processInfo.environment["FASTPULL_TEST_TIME_SCALE"].flatMap { Int($0) }
        return max(value ?? 1, 1)
    }()

    /// The download's result, cancelling it (and recording an issue) if it has not ended within `limit`
    /// (times ``timeScale``).
    func result(within limit: Duration = .seconds(30), sourceLocation: SourceLocation = #_sourceLocation)
        async
        -> Result<Report, any Error>
    {
        let limit = limit * Self.timeScale
        let task = task
        let watchdog = Task {
            do {
                try await Task.sleep(for: limit)
            } catch {
                return false
            }
            task.cancel()
            return true
        }
        let result = await task.result
        watchdog.cancel()
        if await watchdog.value {
            Issue.record(
                "the download did not end within \(limit); cancelled it", sourceLocation: sourceLocation)
        }
        return result
    }

    /// The FastpullError of a failed run, checked for its code and for each of `mentioning` (the URL or
    /// path and a word of the cause) in its message.
    @discardableResult
    static func expectError(
        _ result: Result<Report, any Error>, code: FastpullError.Code, mentioning: [String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> FastpullError {
        let error: FastpullError
        switch result {
        case .success(let report):
            Issue.record(
                "expected a \(code) error, but the download succeeded: \(report)",
                sourceLocation: sourceLocation)
            throw Unexpected()
        case .failure(let failure):
            guard let failure = failure as? FastpullError else {
                Issue.record("expected a FastpullError, got \(failure)", sourceLocation: sourceLocation)
                throw Unexpected()
            }
            error = failure
        }
        // The message with its remedy, as a caller printing the error reads it.
        let text = "\(error)"
        #expect(error.code == code, "\(text)", sourceLocation: sourceLocation)
        for word in mentioning {
            #expect(text.contains(word), "'\(word)' not in: \(text)", sourceLocation: sourceLocation)
        }
        #expect(!text.contains("\n"), "not one line: \(text)", sourceLocation: sourceLocation)
        return error
    }

    struct Unexpected: Error {}
}

/// What a download left next to its output path.
struct Leftovers: CustomStringConvertible {
    let outputPath: String
    let output: Bool
    let part: Bool
    let partSize: Int64?
    /// Any journal file (durable or live) exists.
    let journalFiles: [String]
    /// The durable journal, decoded and validated.
    let journal: Journal?

    init(_ output: URL) {
        outputPath = output.path
        let manager = FileManager.default
        self.output = manager.fileExists(atPath: outputPath)
        let partPath = outputPath + ".part"
        part = manager.fileExists(atPath: partPath)
        var info = stat()
        partSize = lstat(partPath, &info) == 0 ? Int64(info.st_size) : nil
        let folder = output.deletingLastPathComponent().path
        let name = output.lastPathComponent
        journalFiles = ((try? manager.contentsOfDirectory(atPath: folder)) ?? []).filter {
            $0.hasPrefix(name + ".part.fastpull")
        }
        journal = (try? Data(contentsOf: URL(fileURLWithPath: partPath + ".fastpull"))).flatMap {
            try? Journal.decode($0)
        }
    }

    /// A `.part` whose size matches a valid journal: the next run can continue from it.
    var resumable: Bool {
        guard let journal, let partSize else { return false }
        return partSize == journal.size
    }

    /// Bytes the journal lets the next run (on this boot) keep.
    var keptBytes: Int64 { journal?.keptBytes(currentBootID: JournalStore.currentBootID()) ?? 0 }

    /// Nothing at all: no output, no `.part`, no journal.
    var isEmpty: Bool { !output && !part && journalFiles.isEmpty }

    /// The output file and nothing else.
    var onlyOutput: Bool { output && !part && journalFiles.isEmpty }

    /// Whether every byte of the `.part` is zero (nothing was written into the preallocated file).
    func partIsZeros() throws -> Bool {
        try Data(contentsOf: URL(fileURLWithPath: outputPath + ".part")).allSatisfy { $0 == 0 }
    }

    var description: String {
        "output \(output), part \(partSize.map(String.init) ?? "absent"), journal files \(journalFiles), "
            + "journal \(journal.map { "valid, size \($0.size), keeps \(keptBytes)" } ?? "invalid or absent")"
    }
}

/// A loopback TCP server that answers every request with canned bytes: for the faults the fixture
/// server has no switch for (protocol violations, huge heads, a slowloris).
///
/// Each connection runs on a thread of its own: it reads one request head, sends the reply, and closes
/// (`.bytes`), or sends the reply one byte per interval until the client goes away or `stop()`
/// (`.trickle`).
final class RawResponder: Sendable {
    enum Reply: Sendable {
        /// Send these bytes, then close.
        case bytes([UInt8])
        /// Send these bytes one at a time, one per interval.
        case trickle([UInt8], interval: Duration)
    }

    let port: Int
    private let listener: Int32
    private let shared = Shared()

    private struct State {
        var stopped = false
        var connections: Set<Int32> = []
        /// Set by the accept thread as it closes the listener, which only it does.
        var listenerClosed = false
    }

    private final class Shared: Sendable {
        let state = Mutex<State>(State())

        var stopped: Bool { state.withLock { $0.stopped } }
    }

    /// Listens on 127.0.0.1 on a free port; `reply` gets each request head as text.
    init(reply: @escaping @Sendable (String) -> Reply) throws {
        let (fd, port) = try LoopbackListener.open(backlog: 16)
        listener = fd
        self.port = port
        let shared = shared
        Thread {
            // The listener closes here, as the accept thread ends, never while it may still call
            // accept, and stop() shuts it down only while it is open: closed elsewhere, its number
            // could go to another test's socket, which either would then touch.
            defer {
                shared.state.withLock { state in
                    close(fd)
                    state.listenerClosed = true
                }
            }
            while true {
                let connection = accept(fd, nil, nil)
                if connection < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    break
                }
                let accepted = shared.state.withLock { state in
                    guard !state.stopped else { return false }
                    state.connections.insert(connection)
                    return true
                }
                guard accepted else {
                    close(connection)
                    break
                }
                Thread {
                    Self.serve(connection, reply: reply, shared: shared)
                    // Closed under the lock, so stop() never shuts down a number another socket got.
                    shared.state.withLock { state in
                        state.connections.remove(connection)
                        close(connection)
                    }
                }.start()
            }
        }.start()
    }

    deinit { stop() }

    func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)")!
    }

    /// Stops accepting and wakes every connection thread, which then closes its socket.
    func stop() {
        shared.state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            if !state.listenerClosed { Glibc.shutdown(listener, Int32(SHUT_RDWR)) }
            for connection in state.connections { Glibc.shutdown(connection, Int32(SHUT_RDWR)) }
        }
    }

    private static func serve(_ fd: Int32, reply: @Sendable (String) -> Reply, shared: Shared) {
        // Read one request head (up to 64 KiB).
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while request.count < 64 << 10, !request.ends(with: Array("\r\n\r\n".utf8)) {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return }
            request += buffer[..<count]
        }
        switch reply(String(decoding: request, as: UTF8.self)) {
        case .bytes(let bytes):
            _ = send(fd, bytes)
            Glibc.shutdown(fd, Int32(SHUT_WR))
            // Let the client read to the end and close first, so it never sees a reset.
            while buffer.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, 0) }) > 0 {}
        case .trickle(let bytes, let interval):
            let microseconds = UInt32(
                interval.components.seconds * 1_000_000 + interval.components.attoseconds / 1_000_000_000_000)
            for byte in bytes {
                guard !shared.stopped, send(fd, [byte]) else { return }
                // Sleep in slices so that stop() is noticed promptly.
                var slept: UInt32 = 0
                while slept < microseconds, !shared.stopped {
                    usleep(10_000)
                    slept += 10_000
                }
            }
        }
    }

    /// Sends every byte; false once the peer is gone.
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
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}

/// A transport that plays a script: hands out byte chunks, then throws, for tests of what a connection
/// does after a failure.
final class ScriptedTransport: Transport {
    enum Step: Sendable, CustomTestStringConvertible {
        case bytes([UInt8])
        case fail(NetError)

        var testDescription: String {
            switch self {
            case .bytes(let bytes): "bytes \(String(decoding: bytes, as: UTF8.self).debugDescription)"
            case .fail(let error): "fail \(error)"
            }
        }
    }

    private let steps: Mutex<[Step]>

    init(_ steps: [Step]) {
        self.steps = Mutex(steps)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let step = steps.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        switch step {
        case nil:
            return 0
        case .fail(let error):
            throw error
        case .bytes(let bytes):
            let count = min(bytes.count, buffer.count)
            bytes.withUnsafeBytes { source in
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[0..<count]))
            }
            if count < bytes.count { steps.withLock { $0.insert(.bytes(Array(bytes[count...])), at: 0) } }
            return count
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {}
    func shutdown() {}
    func close() {}
}

/// Small file systems for the disk faults: a size-limited tmpfs and a read-only bind mount, made with
/// mount(2) directly (no child process, nothing blocks). Both need root; tests that use them are skipped
/// where mounting fails.
enum Mounts {
    struct Mount {
        let path: String

        func unmount() {
            _ = umount2(path, Int32(MNT_DETACH))
        }
    }

    struct Failed: Error, CustomStringConvertible {
        var description: String
    }

    /// Whether mounting works here (checked once, with a throwaway tmpfs).
    static let available: Bool = {
        guard getuid() == 0 else { return false }
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent("fastpull-mount-\(UUID())")
            .path
        defer { try? FileManager.default.removeItem(atPath: probe) }
        guard let mount = try? tmpfs(probe, megabytes: 1) else { return false }
        mount.unmount()
        return true
    }()

    static func tmpfs(_ path: String, megabytes: Int) throws -> Mount {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let result = "size=\(megabytes)m".withCString { options in
            mount("tmpfs", path, "tmpfs", 0, options)
        }
        guard result == 0 else {
            throw Failed(description: "mount tmpfs \(path): \(String(cString: strerror(errno)))")
        }
        return Mount(path: path)
    }

    static func readOnlyBind(_ path: String) throws -> Mount {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard mount(path, path, nil, UInt(MS_BIND), nil) == 0 else {
            throw Failed(description: "bind mount \(path): \(String(cString: strerror(errno)))")
        }
        let mounted = Mount(path: path)
        guard mount("none", path, nil, UInt(MS_REMOUNT | MS_BIND | MS_RDONLY), nil) == 0 else {
            let reason = String(cString: strerror(errno))
            mounted.unmount()
            throw Failed(description: "remount \(path) read-only: \(reason)")
        }
        return mounted
    }
}
