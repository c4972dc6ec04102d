import FastpullFixtures
import Foundation
import Glibc
import Synchronization
import Testing

@testable import Fastpull
@testable import FastpullEngine

/// The integrity invariants, enforced by the code whatever the server does: every byte written belongs
/// to the version pinned at the probe, one writer per output, the output appears once and verified,
/// and memory stays bounded. Each test is a finding from trying Fastpull against servers it did not
/// write; each failed (wrote a wrong file with success, or crashed) before the invariant was code.
@Suite("Invariants against servers that misbehave", .timeLimit(.minutes(5)))
struct InvariantTests {
    let server: FixtureServer
    let files = TemporaryFolder()
    let folder = TemporaryFolder()
    let size = 6 << 20

    init() throws {
        var configuration = FixtureServer.Configuration()
        configuration.filesDirectory = files.path
        server = try FixtureServer(configuration)
    }

    var output: URL { folder.url("out.bin") }

    // MARK: - One version

    /// A server that ignores `If-Range` (h2o 2.2, `RangeHTTPServer`) answers a stale range with a 206
    /// of the new version and its new ETag. Before: the old and new bytes mixed, exit 0. Now every 206's
    /// validators are compared with the pinned ones: the download starts over and saves only the new
    /// version.
    @Test func aServerIgnoringIfRangeNeverMixesVersions() async throws {
        let path = URL(fileURLWithPath: files.path).appendingPathComponent("v.bin")
        try Data(FixtureContent.bytes(count: size, seed: 1)).write(to: path, options: .atomic)
        let url = server.url("/files/v.bin?if-range=ignore&rate=\(700_000 / FaultRun.timeScale)")
        let download = Download(from: url, to: output, configuration: .quickRetries(connections: 2))
        let log = EventLog(download)
        let task = Task { try await download.run() }
        let second = Data(FixtureContent.bytes(count: size, seed: 4))
        await download.whenWritten(atLeast: 1 << 20) { try? second.write(to: path, options: .atomic) }
        let report = try await task.value
        #expect(try Data(contentsOf: output) == second)
        #expect(report.sha256 == Expected.sha256(size: size, seed: 4))
        let events = await log.finish()
        let restarts = events.compactMap {
            if case .restarting(let reason) = $0.detail { reason } else { nil }
        }
        #expect(restarts.contains { $0.contains("ETag") }, "\(restarts)")
    }

    /// A server without ETags that ignores `If-Range`: after the probe's answer (the first megabyte:
    /// this server sends at most that of a range), its 206s carry another Last-Modified (the file was
    /// replaced). Before: the 206s were written whatever their date. Now a 206 whose Last-Modified
    /// differs from the pinned one is a remote change: the download starts over (and saves the version
    /// it then pins), or under `--no-restart` exits 5, leaving nothing.
    @Test(arguments: [true, false])
    func aRangeOfAnotherLastModifiedIsARemoteChange(restarts: Bool) async throws {
        let size = 4 << 20
        let body = FixtureContent.bytes(count: size, seed: 13)
        let answers = Atomic<Int>(0)
        let responder = try RangeResponder(
            body: body, keepAlive: .closeAfterEachAnswer, largestAnswer: 1 << 20
        ) { _, range in
            let count = answers.add(1, ordering: .relaxed).newValue
            let modified = count <= 1 ? "Mon, 02 Mar 2026 10:00:00 GMT" : "Tue, 03 Mar 2026 11:00:00 GMT"
            let headers =
                "Last-Modified: \(modified)\r\nDate: Wed, 04 Mar 2026 12:00:00 GMT\r\nAccept-Ranges: bytes\r\n"
            return range == nil ? .whole(extraHeaders: headers) : .partial(extraHeaders: headers)
        }
        defer { responder.stop() }
        var configuration = Configuration.quickRetries(connections: 1)
        configuration.connections.minimumSegmentSize = 1 << 20
        configuration.resume.restartsWhenRemoteChanges = restarts
        let download = Download(from: responder.url("/dated"), to: output, configuration: configuration)
        let log = EventLog(download)
        let result: Result<Report, any Error>
        do {
            result = .success(try await download.run())
        } catch {
            result = .failure(error)
        }
        let events = await log.finish()
        if restarts {
            let report = try result.get()
            #expect(report.sha256 == Expected.sha256(size: size, seed: 13))
            let reasons = events.compactMap {
                if case .restarting(let reason) = $0.detail { reason } else { nil }
            }
            #expect(reasons.contains { $0.contains("Last-Modified") }, "\(reasons)")
        } else {
            _ = try FaultRun.expectError(
                result, code: .remoteChanged, mentioning: ["Last-Modified"])
            #expect(Leftovers(output).isEmpty, "\(Leftovers(output))")
        }
    }

    /// A server whose every second answer is another version (two backends behind one name), and
    /// which ignores `If-Range` (and sends at most a megabyte of a range, so that the probe's answer
    /// is not the whole file): before, the output alternated between versions, exit 0. Now it can
    /// never settle on one version: it starts over twice, then exits 5, and leaves nothing. The same
    /// with validators that say less: a weak ETag only (`W/"…"`, no Last-Modified), or a new version
    /// that leaves the ETag out and sends its own Last-Modified (before, exit 0 with both versions
    /// mixed: a weak tag was no validator at all, and an answer without an ETag proved nothing).
    @Test(arguments: ["strong", "weak", "changed-without-etag"])
    func aServerFlappingBetweenVersionsEndsAsARemoteChange(validators: String) async throws {
        let url = server.url(
            "/gen/\(4 << 20)?alternate=1&if-range=ignore&largest-answer=1048576&validators=\(validators)")
        let result = await FaultRun.download(url, to: output, .quickRetries(connections: 2))
        _ = try FaultRun.expectError(
            result, code: .remoteChanged, mentioning: [url.absoluteString, "changing"])
        #expect(Leftovers(output).isEmpty, "\(Leftovers(output))")
    }

    /// Answers that say the file is empty while a GET without a range brings it: a HEAD announcing 0
    /// bytes (a common bug of dynamic servers; the opening GET's answer with ranges offered is not
    /// taken as it is, so HEAD is asked), and a 416 without Content-Range to every range (as S3 answers
    /// for an empty object). Before: an empty file, exit 0. Now a GET without a range confirms it,
    /// and the file is the server's.
    @Test(arguments: ["whole-from=0&head-length=0", "status=416&status-ranged=1"])
    func anAnswerSayingTheFileIsEmptyIsConfirmedByAGETWithoutARange(query: String) async throws {
        let size = 1 << 20
        let result = await FaultRun.download(
            server.url("/gen/\(size)?\(query)"), to: output, .quickRetries(connections: 2))
        let report = try result.get()
        #expect(report.sha256 == Expected.sha256(size: size))
        #expect(try Data(contentsOf: output) == Data(FixtureContent.bytes(count: size, seed: 1)))
    }

    /// A 206 framed as `multipart/byteranges` for a single range, with a matching Content-Range. Before:
    /// the boundaries and part headers were written into the file, exit 0. Now nothing of it is written,
    /// and it is a remote change: the download starts over, or fails with exit 5 under `--no-restart`.
    @Test(arguments: [true, false])
    func aMultipartAnswerToOneRangeIsNeverWritten(restarts: Bool) async throws {
        let url = server.url("/gen/\(2 << 20)?multipart=1")
        var configuration = Configuration.quickRetries(1, connections: 2)
        configuration.resume.restartsWhenRemoteChanges = restarts
        let result = await FaultRun.download(url, to: output, configuration)
        // A remote change: started over (the server answers so every time, so it "kept changing"),
        // or with --no-restart at once; exit 5 either way, and nothing written.
        let error = try FaultRun.expectError(
            result, code: .remoteChanged,
            mentioning: [
                url.absoluteString, "multipart/byteranges", restarts ? "kept changing" : "changed during",
            ])
        #expect(error.remedy == (restarts ? nil : .startOver))
        #expect(Leftovers(output).isEmpty, "\(Leftovers(output))")
        // Every GET was answered so; the probe's HEAD and one GET a start, at least.
        #expect(server.stats.requests >= (restarts ? 6 : 2))
    }

    /// HEAD announces 2 MiB without ranges; the GET is an HTTP/1.0 body without a length that ends
    /// (the server closes) after 1 MiB, or 1,000 bytes past the 2 MiB. Before: exit 0 with the short or
    /// long file. Now HEAD's length is the expected size of the stream.
    @Test(arguments: [-(1 << 20), 1000])
    func aStreamWithoutLengthMustBeAsLongAsHEADSaid(difference: Int) async throws {
        let announced = 2 << 20
        let body = [UInt8](FixtureContent.bytes(count: announced + difference, seed: 3))
        let responder = try RawResponder { request in
            if request.hasPrefix("HEAD") {
                return .bytes(
                    Array("HTTP/1.1 200 OK\r\nContent-Length: \(announced)\r\nConnection: close\r\n\r\n".utf8)
                )
            }
            return .bytes(
                Array("HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n".utf8) + body)
        }
        defer { responder.stop() }
        let url = responder.url("/no-length")
        let result = await FaultRun.download(url, to: output, .quickRetries(0, connections: 1))
        let code: FastpullError.Code = difference < 0 ? .network : .httpStatus
        _ = try FaultRun.expectError(result, code: code, mentioning: [url.absoluteString, "\(announced)"])
        #expect(Leftovers(output).isEmpty, "\(Leftovers(output))")
    }

    /// `Content-Length: 2^62` with ranges. Before: the plan tried to allocate 6.6 TB (abort, exit 134);
    /// 2^50 cost 1.6 GB before the space check. Now the plan is bounded and the size is checked against
    /// the free space first: a clear local error, nothing left.
    @Test(arguments: [Int64(1) << 62, Int64(1) << 50])
    func anAbsurdSizeIsALocalErrorNeverAnAbort(size: Int64) async throws {
        let responder = try RawResponder { _ in
            .bytes(
                Array(
                    "HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\nAccept-Ranges: bytes\r\nETag: \"huge\"\r\nConnection: close\r\n\r\n"
                        .utf8))
        }
        defer { responder.stop() }
        let url = responder.url("/huge")
        let result = await FaultRun.download(url, to: output, .quickRetries(0, connections: 4))
        _ = try FaultRun.expectError(
            result, code: .localIO, mentioning: [url.absoluteString, "\(size) bytes", "free", folder.path])
        #expect(Leftovers(output).isEmpty, "\(Leftovers(output))")
    }

    // MARK: - One writer

    /// Two downloads to one output at once (any URLs). Before: the second unlinked the first one's
    /// `.part`, and the first renamed the second's bytes into place, reporting its own SHA-256. Now the
    /// second fails at once with a local error naming the path, and touches nothing.
    @Test func aSecondDownloadToTheSameOutputFailsAtOnce() async throws {
        // 100 kB/s per connection: the first download lasts over 30 s, far longer than the second needs
        // even while the whole suite loads the machine (measured there: up to 9 s).
        let first = Download(
            from: server.url("/gen/\(size)?rate=\(100_000 / FaultRun.timeScale)"), to: output,
            configuration: .quickRetries(connections: 2))
        let task = Task { try await first.run() }
        #expect(await first.whenWritten(atLeast: 256 << 10))
        let second = await FaultRun.download(server.url("/gen/\(size)?seed=7"), to: output, .quickRetries())
        // It failed while the first was still writing: it did not wait for the first to finish.
        #expect(first.progress.bytesWritten < Int64(size))
        _ = try FaultRun.expectError(
            second, code: .localIO, mentioning: [output.path + ".part", "process \(getpid())"])
        let report = try await task.value
        #expect(report.sha256 == Expected.sha256(size: size))
        #expect(try Data(contentsOf: output) == Data(FixtureContent.bytes(count: size, seed: 1)))
        #expect(Leftovers(output).onlyOutput)
    }

    /// A hard link planted at `<out>.part` to another file. Before: the download was written through it,
    /// into the other file. Now it is refused, and the other file is untouched.
    @Test func aHardLinkAtThePartFileIsRefused() async throws {
        let victim = folder.url("victim.txt")
        let contents = Data("do not overwrite\n".utf8)
        try contents.write(to: victim)
        #expect(link(victim.path, output.path + ".part") == 0)
        let result = await FaultRun.download(server.url("/gen/\(1 << 20)"), to: output, .quickRetries())
        _ = try FaultRun.expectError(
            result, code: .localIO, mentioning: [output.path + ".part", "hard links"])
        #expect(try Data(contentsOf: victim) == contents)
        #expect(!FileManager.default.fileExists(atPath: output.path))
    }

    // MARK: - Appearing safely

    /// A file that appears at the output path during a download that may not replace it (the command
    /// line without --force). Before: the final rename overwrote it. Now it stays, the download fails
    /// with a local error, and the verified bytes wait in the `.part` for a run that may replace.
    @Test func aFileThatAppearsMeanwhileIsNotReplaced() async throws {
        let url = server.url("/gen/\(size)?rate=\(2_000_000 / FaultRun.timeScale)")
        try await expectAFileThatAppearsMeanwhileStays(url, mentioning: "appeared")
        let left = Leftovers(output)
        #expect(left.resumable && left.keptBytes == Int64(size), "\(left)")

        // A run that may replace finds every byte in place and fetches nothing more.
        var replacing = Configuration.quickRetries()
        replacing.resume.replacesExistingFile = true
        let again = try await FaultRun.download(url, to: output, replacing).get()
        #expect(again.resumedBytes == Int64(size))
        #expect(again.bytesFetched == 0)
        #expect(try Data(contentsOf: output) == Data(FixtureContent.bytes(count: size, seed: 1)))
    }

    /// The same where no journal can make the `.part` resumable (a server without ranges: one stream).
    /// Before: the error said the verified file stayed in its `.part`, but the `.part` was removed with
    /// the other unresumable leftovers. Now it stays, with every verified byte.
    @Test func aFileThatAppearsMeanwhileLeavesTheVerifiedPartEvenWithoutAJournal() async throws {
        let url = server.url("/gen/\(size)?no-ranges=1&rate=\(2_000_000 / FaultRun.timeScale)")
        try await expectAFileThatAppearsMeanwhileStays(url, mentioning: "stays in its .part")
        let part = URL(fileURLWithPath: output.path + ".part")
        #expect(try Data(contentsOf: part) == Data(FixtureContent.bytes(count: size, seed: 1)))
    }

    /// Downloads `url` without leave to replace, plants a file at the output once 256 KiB are written,
    /// and expects the download to fail with a local error `mentioning` that, the planted file kept.
    func expectAFileThatAppearsMeanwhileStays(
        _ url: URL, mentioning: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        var configuration = Configuration.quickRetries(connections: 2)
        configuration.resume.replacesExistingFile = false
        let download = Download(from: url, to: output, configuration: configuration)
        let task = Task { try await download.run() }
        let planted = Data("the user's own file\n".utf8)
        let output = output
        await download.whenWritten(atLeast: 256 << 10) { try? planted.write(to: output) }
        let error = try FaultRun.expectError(
            await task.result, code: .localIO, mentioning: [output.path, mentioning])
        #expect(error.remedy == .replaceExisting, sourceLocation: sourceLocation)
        #expect(try Data(contentsOf: output) == planted, sourceLocation: sourceLocation)
    }

    /// A character device at the output path (as `-o /dev/null` is). Before, with --force: replaced by
    /// a regular file (as root, `/dev/null` itself). Now a device is never replaced.
    @Test(.enabled(if: getuid() == 0, "mknod needs root"))
    func aDeviceAtTheOutputIsNeverReplaced() async throws {
        // Major 1, minor 3: the null device.
        #expect(mknod(output.path, S_IFCHR | 0o666, dev_t(1 << 8 | 3)) == 0)
        let result = await FaultRun.download(server.url("/gen/4096"), to: output, .quickRetries())
        var info = stat()
        #expect(lstat(output.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFCHR)
        if case .failure(let error) = result {
            #expect((error as? FastpullError)?.code == .localIO, "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: output.path + ".part"))
    }

    // MARK: - Names and journals

    /// A name that fits 255 bytes but not with `.part.fastpull-live.tmp` beside it. Before: it failed
    /// mid-download, leaving a `.part` without a journal. Now it is refused before anything happens.
    @Test func aNameWithoutRoomForThePartFilesIsRefusedUpFront() async throws {
        let name = String(repeating: "n", count: 240) + ".bin"
        let result = await FaultRun.download(server.url("/gen/4096"), to: folder.url(name), .quickRetries())
        _ = try FaultRun.expectError(result, code: .usage, mentioning: [name, "at most 232 bytes"])
        #expect(folder.contents == [])
    }

    /// A journal edited to claim every byte is written. Before: the run resumed into the unwritten
    /// bytes and exited 0 with a wrong file. Now its checksum gives it away: it starts over, and the
    /// file is right.
    @Test func anEditedJournalIsNotTrusted() async throws {
        let url = server.url("/gen/\(size)?rate=\(2_000_000 / FaultRun.timeScale)")
        let first = Download(from: url, to: output, configuration: .quickRetries(connections: 2))
        let task = Task { try await first.run() }
        await first.whenWritten(atLeast: 1 << 20) { first.pause() }
        _ = await task.result
        let journalPath = output.path + ".part.fastpull"
        try? FileManager.default.removeItem(atPath: journalPath + "-live")
        // Every segment claims to be complete; the checksum still says what the journal was.
        let data = try Data(contentsOf: URL(fileURLWithPath: journalPath))
        var object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let segments = try #require(object["segments"] as? [[String: Any]])
        object["segments"] = segments.map { segment -> [String: Any] in
            var segment = segment
            let length = (segment["end"] as? Int ?? 0) - (segment["start"] as? Int ?? 0)
            segment["written"] = length
            segment["durable"] = length
            return segment
        }
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: journalPath))
        let second = Download(from: url, to: output, configuration: .quickRetries())
        let log = EventLog(second)
        let report = try await second.run()
        #expect(report.resumedBytes == 0)
        #expect(try Data(contentsOf: output) == Data(FixtureContent.bytes(count: size, seed: 1)))
        let warnings = await log.finish().compactMap {
            if case .warning(let text) = $0.detail { text } else { nil }
        }
        #expect(warnings.contains { $0.contains("damaged or edited") }, "\(warnings)")
    }

    /// A failure before any byte was saved, whatever its kind, leaves nothing: the `.part` the size of
    /// the file and its journal only held space (see also the fault matrix).
    @Test func aProbeFailureLeavesNothing() async throws {
        let result = await FaultRun.download(server.url("/nowhere"), to: output, .quickRetries(0))
        _ = try FaultRun.expectError(result, code: .httpStatus, mentioning: ["404"])
        #expect(folder.contents == [])
    }
}
