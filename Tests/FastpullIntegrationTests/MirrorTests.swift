import FastpullFixtures
import Foundation
import Synchronization
import Testing

@testable import Fastpull
@testable import FastpullEngine

/// Several sources for one file (``Configuration/Sources/mirrors``) and piece hashes, against fixture servers
/// that serve the same generated content: bytes spread over the sources, a source that fails or sends
/// bad bytes dropped while the others finish, and only a bad piece fetched again.
@Suite("Mirrors and piece hashes")
struct MirrorTests {
    let servers: [FixtureServer]
    let folder = TemporaryFolder()
    static let size = 8 << 20

    init() throws {
        servers = try (0..<3).map { _ in try FixtureServer() }
    }

    var output: URL { folder.url("out.bin") }
    /// Computed once: the suite's tests run side by side with hundreds of others on two cores.
    static let sha256 = digest(.sha256, of: 0..<size)
    static let content = FixtureContent.bytes(count: size, seed: 1)

    static func digest(_ algorithm: Digest.Algorithm, of range: Range<Int>) -> String {
        Digest.hex(Digest.compute(algorithm, of: Array(content[range])))
    }

    /// Six connections, quick retries, a rate that keeps the download going for a moment (each
    /// connection 2 MB/s).
    static func configuration(mirrors: [URL], checksums: [Checksum] = [.sha256(sha256)]) -> Configuration {
        var configuration = Configuration(checksums: checksums)
        configuration.connections.count = 6
        configuration.retries.limit = 2
        configuration.retries.baseDelay = .milliseconds(5)
        configuration.sources.mirrors = mirrors
        return configuration
    }

    func url(_ server: Int, _ query: String = "rate=2000000") -> URL {
        servers[server].url("/gen/\(Self.size)?\(query)")
    }

    /// Runs a download and collects its events.
    func run(_ configuration: Configuration, from url: URL) async throws -> (Report, [Event]) {
        let download = Download(from: url, to: output, configuration: configuration)
        let log = EventLog(download)
        let report = try await download.run()
        return (report, await log.finish())
    }

    static func dropped(_ events: [Event]) -> [(URL, String)] {
        events.compactMap {
            if case .sourceDropped(let url, let reason) = $0.detail { (url, reason) } else { nil }
        }
    }

    @Test func theBytesComeFromEverySourceAndVerify() async throws {
        let (report, events) = try await run(
            Self.configuration(mirrors: [url(1), url(2)]), from: url(0))
        #expect(try Data(contentsOf: output) == Data(Self.content))
        #expect(report.sources.map(\.url) == [url(0), url(1), url(2)])
        #expect(report.sources.allSatisfy { $0.bytes > 0 && $0.dropped == nil }, "\(report.sources)")
        #expect(report.sources.reduce(0) { $0 + $1.bytes } == Int64(Self.size))
        for server in servers { #expect(server.stats.bodyBytesSent > 0) }
        #expect(Self.dropped(events).isEmpty)
        guard case .finished(let finished)? = events.last?.detail else {
            Issue.record("no finished event: \(events.last.map { "\($0)" } ?? "none")")
            return
        }
        #expect(finished.sources == report.sources)
    }

    /// A mirror that answers 404 is dropped with the reason, one of another size is never used, and
    /// the file still verifies from the sources left.
    @Test func aFailingOrDifferentMirrorIsDroppedAndTheOthersFinish() async throws {
        let missing = servers[1].url("/gen/\(Self.size)?status=404")
        let other = servers[2].url("/gen/\(Self.size + 1)")
        let (report, events) = try await run(
            Self.configuration(mirrors: [missing, other]), from: url(0))
        #expect(try Data(contentsOf: output) == Data(Self.content))
        let dropped = Self.dropped(events)
        #expect(Set(dropped.map(\.0)) == [missing, other] && dropped.count == 2)
        #expect(dropped.contains { $0.0 == missing && $0.1.contains("404") }, "\(dropped)")
        #expect(dropped.contains { $0.0 == other && $0.1.contains("\(Self.size + 1) bytes") }, "\(dropped)")
        #expect(report.sources.map(\.url) == [url(0), missing, other])
        #expect(report.sources.map(\.bytes) == [Int64(Self.size), 0, 0])
        #expect(report.sources.dropFirst().allSatisfy { $0.dropped != nil })
        #expect(servers[1].stats.bodyBytesSent == 0)
        #expect(servers[2].stats.bodyBytesSent == 0)
    }

    /// A mirror that fails after it has served (every connection reset) is dropped mid-download; the
    /// other source finishes its bytes.
    @Test func aMirrorThatBreaksMidwayIsDropped() async throws {
        let breaking = servers[1].url("/gen/\(Self.size)?rate=500000&drop-after=1000&drops=100000")
        let (report, events) = try await run(Self.configuration(mirrors: [breaking]), from: url(0))
        #expect(try Data(contentsOf: output) == Data(Self.content))
        #expect(Self.dropped(events).map(\.0) == [breaking])
        #expect(report.sources.last?.dropped != nil)
    }

    /// A mirror that refuses connections beyond its limit (503, as one that limits connections per
    /// client does) is not dropped: it keeps the connections it took, and the others go elsewhere.
    /// Counted as failures, four refusals in a row would have dropped it.
    @Test func aMirrorThatRefusesMoreConnectionsKeepsServing() async throws {
        let limited = servers[1].url("/gen/\(Self.size)?rate=2000000&status=503&statuses=4&status-ranged=1")
        let (report, events) = try await run(Self.configuration(mirrors: [limited]), from: url(0))
        #expect(try Data(contentsOf: output) == Data(Self.content))
        #expect(Self.dropped(events).isEmpty, "\(Self.dropped(events))")
        #expect(report.sources.last?.bytes ?? 0 > 0, "\(report.sources)")
    }

    /// A server that names its mirrors (RFC 6249 `Link: rel=duplicate`) gets them used when the file
    /// can be verified; not without a checksum, and not with ``Configuration/Sources/usesLinkedMirrors`` off.
    @Test(arguments: [(true, true), (false, true), (true, false)])
    func mirrorsTheServerNamesAreUsedWhenVerifiable(_ checksum: Bool, _ linked: Bool) async throws {
        let mirror = url(1)
        let link = "<\(mirror.absoluteString)>; rel=duplicate; pri=1, <ftp://x.test/a>; rel=duplicate"
        let encoded = link.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        var configuration = Self.configuration(mirrors: [], checksums: checksum ? [.sha256(Self.sha256)] : [])
        configuration.sources.usesLinkedMirrors = linked
        let (report, events) = try await run(configuration, from: url(0, "rate=2000000&link=\(encoded)"))
        #expect(try Data(contentsOf: output) == Data(Self.content))
        let used = checksum && linked
        #expect(report.sources.map(\.url) == (used ? [url(0, "rate=2000000&link=\(encoded)"), mirror] : []))
        #expect((servers[1].stats.bodyBytesSent > 0) == used)
        #expect(!events.contains { if case .warning = $0.detail { true } else { false } })
    }

    /// A mirror of the same size but other bytes, with only a whole-file checksum: the mixed file
    /// fails its check, nothing says which source was wrong, so the file is fetched again from the URL
    /// asked for alone, and verifies.
    @Test func aMixedFileThatFailsItsChecksumIsFetchedAgainFromTheFirstSource() async throws {
        let other = servers[1].url("/gen/\(Self.size)?rate=2000000&seed=2")
        let (report, events) = try await run(Self.configuration(mirrors: [other]), from: url(0))
        #expect(try Data(contentsOf: output) == Data(Self.content))
        let warnings = events.compactMap { if case .warning(let text) = $0.detail { text } else { nil } }
        #expect(warnings.contains { $0.contains("failed its check") && $0.contains("alone") }, "\(warnings)")
        #expect(report.sources.isEmpty)
        #expect(servers[1].stats.bodyBytesSent > 0)
    }

    /// Nothing to verify a mixed file: only the URL asked for serves, and the user is told why.
    @Test func withoutAChecksumOnlyTheFirstSourceServes() async throws {
        let (report, events) = try await run(
            Self.configuration(mirrors: [url(1)], checksums: []), from: url(0))
        #expect(try Data(contentsOf: output) == Data(Self.content))
        #expect(report.sources.isEmpty)
        #expect(servers[1].stats.requests == 0)
        let warnings = events.compactMap { if case .warning(let text) = $0.detail { text } else { nil } }
        #expect(
            warnings.contains { $0.contains("mixed file") && $0.contains("give a checksum") }, "\(warnings)")
    }

    /// ``Configuration/Sources/mixesUnverified`` mixes them anyway.
    @Test func unverifiedMirrorsServeWhenAskedTo() async throws {
        var configuration = Self.configuration(mirrors: [url(1)], checksums: [])
        configuration.sources.mixesUnverified = true
        let (report, _) = try await run(configuration, from: url(0))
        #expect(try Data(contentsOf: output) == Data(Self.content))
        #expect(report.sources.count == 2)
        #expect(servers[1].stats.bodyBytesSent > 0)
    }

    // MARK: - Piece hashes

    static let pieceLength = 1 << 20

    static let sha256Pieces = makePieces(.sha256)
    static let sha1Pieces = makePieces(.sha1)

    static func pieces(_ algorithm: Digest.Algorithm = .sha256) -> PieceHashes {
        algorithm == .sha1 ? sha1Pieces : sha256Pieces
    }

    private static func makePieces(_ algorithm: Digest.Algorithm) -> PieceHashes {
        let hashes = stride(from: 0, to: size, by: pieceLength).map { start in
            let hex = digest(algorithm, of: start..<min(start + pieceLength, size))
            return algorithm == .sha1 ? Checksum.sha1(hex) : Checksum.sha256(hex)
        }
        return PieceHashes(length: Int64(pieceLength), hashes: hashes)
    }

    /// A source that flips a byte: its bad piece is caught by its hash, the source is named and
    /// dropped, and only that piece is fetched again, from the source left. The corrupt one is the URL
    /// asked for, so it serves the first piece (the first connection's first window, before any
    /// mirror has been probed), where the flipped byte is.
    @Test(arguments: [Digest.Algorithm.sha256, .sha1])
    func aCorruptSourceCostsOnlyItsBadPiece(_ algorithm: Digest.Algorithm) async throws {
        let corrupt = servers[0].url("/gen/\(Self.size)?rate=2000000&corrupt=12345")
        var configuration = Self.configuration(mirrors: [url(1)], checksums: [])
        configuration.integrity.pieceHashes = Self.pieces(algorithm)
        let (report, events) = try await run(configuration, from: corrupt)
        #expect(try Data(contentsOf: output) == Data(Self.content))
        let failed = events.compactMap {
            if case .pieceFailed(let at, let length, let sources) = $0.detail {
                (at, length, sources)
            } else {
                nil
            }
        }
        // Once when it alone sent the piece; twice when a mirror's connection took part of it (a
        // source that shared a bad piece is dropped at its second).
        #expect((1...2).contains(failed.count), "\(failed)")
        #expect(failed.allSatisfy { $0.0 == 0 && $0.1 == Int64(Self.pieceLength) && $0.2.contains(corrupt) })
        #expect(Self.dropped(events).map(\.0) == [corrupt])
        #expect(report.sources.first?.dropped?.contains("piece hash") == true, "\(report.sources)")
        #expect(report.sources.last?.dropped == nil)
        let sent = servers.reduce(Int64(0)) { $0 + $1.stats.bodyBytesSent }
        // Every byte once, the bad piece again (twice at most), and what cut requests sent past
        // their ends: never the whole file again.
        #expect(
            sent <= Int64(Self.size + 2 * Self.pieceLength) + 6 * SegmentFetcher.drainLimit, "sent \(sent)")
    }

    /// The bad piece is found every time when the only source corrupts it: after three tries the
    /// download fails as an integrity error naming the bytes, and never saves the file.
    @Test func aPieceThatNeverVerifiesFailsTheDownload() async throws {
        var configuration = Self.configuration(mirrors: [], checksums: [])
        configuration.integrity.pieceHashes = Self.pieces()
        let download = Download(
            from: url(0, "corrupt=\(3 * Self.pieceLength)"), to: output, configuration: configuration)
        let log = EventLog(download)
        do {
            _ = try await download.run()
            Issue.record("a file whose piece never verifies was saved")
        } catch {
            #expect(error.code == .integrity)
            #expect(
                error.message.contains("bytes \(3 * Self.pieceLength)-\(4 * Self.pieceLength - 1)"),
                "\(error)")
            #expect(error.message.contains("3 times"), "\(error)")
        }
        let events = await log.finish()
        #expect(events.count { if case .pieceFailed = $0.detail { true } else { false } } == 2)
        #expect(!FileManager.default.fileExists(atPath: output.path))
    }

    /// Piece hashes that do not fit the file are a usage error before any byte is fetched.
    @Test func pieceHashesThatDoNotFitAreRefused() async throws {
        var configuration = Self.configuration(mirrors: [], checksums: [])
        configuration.integrity.pieceHashes = PieceHashes(
            length: Int64(Self.pieceLength), hashes: [.sha256(Self.sha256)])
        do {
            _ = try await Fastpull.download(from: url(0, "seed=1"), to: output, configuration: configuration)
            Issue.record("piece hashes for 1 MiB accepted for 8 MiB")
        } catch {
            #expect(error.code == .usage)
            #expect(error.message.contains("do not cover a file of \(Self.size) bytes"), "\(error)")
        }
    }

    /// A size given for the file (a Metalink's) that the server does not serve fails the download.
    @Test func aServerOfAnotherSizeThanExpectedFails() async throws {
        var configuration = Self.configuration(mirrors: [])
        configuration.integrity.expectedSize = Int64(Self.size - 1)
        do {
            _ = try await Fastpull.download(from: url(0, "seed=1"), to: output, configuration: configuration)
            Issue.record("a file of the wrong size was saved")
        } catch {
            #expect(error.code == .integrity)
            #expect(error.message.contains("but the file is \(Self.size - 1) bytes"), "\(error)")
        }
    }
}

/// Which source each byte was asked from.
@Suite("Source map")
struct SourceMapTests {
    @Test func laterWindowsWinWhereTheyOverlapAndNeighboursJoin() {
        let map = SourceMap()
        map.record(0..<100, source: 0)
        map.record(100..<200, source: 0)
        map.record(150..<300, source: 1)
        #expect(map.all == [.init(range: 0..<150, source: 0), .init(range: 150..<300, source: 1)])
        map.record(50..<60, source: 2)
        #expect(map.sources(in: 40..<55) == [0, 2])
        #expect(map.sources(in: 140..<160) == [0, 1])
        #expect(map.sources(in: 300..<400) == [])
        #expect(map.all.map(\.range) == [0..<50, 50..<60, 60..<150, 150..<300])
        #expect(
            map.runs(in: 55..<160) == [
                .init(range: 55..<60, source: 2), .init(range: 60..<150, source: 0),
                .init(range: 150..<160, source: 1),
            ])
    }
}

/// Reopening written bytes that did not verify.
@Suite("Segment table: reopen")
struct ReopenTests {
    @Test func aReopenedRangeWaitsAgainAndTheFrontierGoesBack() throws {
        let now = ContinuousClock.now
        var table = SegmentTable(segments: [
            Segment(start: 0, end: 100, written: 100), Segment(start: 100, end: 300, written: 200),
        ])
        #expect(table.isComplete)
        table.reopen(50..<150)
        #expect(table.frontier == 50)
        #expect(table.writtenBytes == 200)
        #expect(
            table.segments.map { [$0.start, $0.end, $0.written] } == [
                [0, 50, 50], [50, 150, 0], [150, 300, 150],
            ])
        let next = table.nextWindow(for: 7, now: now)
        let (window, _) = try #require(next)
        #expect(window.range.lowerBound == 50)
        #expect(window.range.upperBound <= 150)
    }
}

/// The source set's decisions, one at a time.
@Suite("Source set")
struct SourceSetTests {
    static func remote(_ host: String) -> RemoteFile {
        let url = URL(string: "http://\(host)/f")!
        return RemoteFile(
            url: url, finalURL: url, size: 10, acceptsRanges: true, etag: nil, lastModified: nil)
    }

    let sources = SourceSet([remote("a.test"), remote("b.test"), remote("c.test")])

    @Test func untriedSourcesFirstThenTheFastestPerConnection() {
        #expect(sources.bind(0).index == 0)
        #expect(sources.bind(1).index == 1)
        #expect(sources.bind(2).index == 2)
        sources.served(0, bytes: 2_000_000, seconds: 1, complete: true)
        sources.served(1, bytes: 500_000, seconds: 1, complete: true)
        sources.served(2, bytes: 100_000, seconds: 1, complete: true)
        #expect(sources.bind(3).index == 0)
        // A connection far slower than its peers moves to a source twice as fast.
        sources.reconsider(2)
        #expect(sources.bind(2).index == 0)
    }

    /// A source whose connections share one limit (their rate fell as more joined) gets the few it
    /// needs, the rest go where one more connection adds its rate, even when each of the shared
    /// source's connections is still faster; the ones it does not need move at their next window.
    @Test func aSharedSourceKeepsTheFewItNeeds() {
        let sources = SourceSet([Self.remote("a.test"), Self.remote("b.test")])
        #expect(sources.bind(0).index == 0)
        #expect(sources.bind(1).index == 1)
        // A: 5 MB/s per connection. B: one connection alone got 50 MB/s.
        sources.served(0, bytes: 5_000_000, seconds: 1)
        sources.served(1, bytes: 50_000_000, seconds: 1)
        // B is the better place for a second connection, and for a few more.
        for worker in 2..<6 { #expect(sources.bind(worker).index == 1, "worker \(worker)") }
        // Five on B now share its 50 MB/s: 10 each, far below what one got.
        for _ in 0..<3 { sources.served(1, bytes: 10_000_000, seconds: 1) }
        let b = sources.snapshot[1]
        #expect(b.isShared)
        #expect(b.need < 5, "B needs \(b.need)")
        // Each of B's connections still gets twice A's rate, yet one more there adds nothing.
        #expect((b.rate ?? 0) > 2 * 5_000_000)
        #expect(sources.bind(6).index == 0)
        // B's connections beyond its need are named once to move; at their next window they do.
        let moving = sources.surplusWorkers()
        #expect(moving.count == 5 - b.need)
        #expect(sources.surplusWorkers().isEmpty)
        for worker in moving { #expect(sources.bind(worker).index == 0) }
        #expect(sources.snapshot[1].workers.count == b.need)
    }

    /// Each source counted on its own (``SourceCounts``): a connection goes to the source with the
    /// most room in its allowance, and those a source holds beyond its allowance are named once to
    /// move while another has room; at their next window they go there.
    @Test func connectionsFollowEachSourcesAllowance() {
        let sources = SourceSet([Self.remote("a.test"), Self.remote("b.test")])
        sources.allow([0: 2, 1: 6])
        let bound = (0..<8).map { sources.bind($0).index }
        #expect(bound.count { $0 == 0 } == 2 && bound.count { $0 == 1 } == 6, "\(bound)")
        // B turned out shared: it keeps two, A may take the rest.
        sources.allow([0: 6, 1: 2])
        let moving = sources.surplusWorkers()
        #expect(moving.count == 4)
        #expect(moving.allSatisfy { sources.snapshot[1].workers.contains($0) })
        #expect(sources.surplusWorkers().isEmpty)
        for worker in moving { #expect(sources.bindNow(worker).index == 0) }
        #expect(sources.snapshot.map(\.workers.count) == [6, 2])
        // A dropped source has no allowance: nothing new goes there.
        sources.allow([0: 7, 1: 0])
        #expect(sources.bind(8).index == 0)
    }

    /// A source that refuses even a lone connection, again and again, refuses this client: it is
    /// dropped while another serves (each connection was sent back to it at once after every
    /// refusal: 16,000 requests a second). A source that refused one connection too many takes one
    /// more again after twice as many answers in full as it allowed.
    @Test func refusalsLimitASourceForAWhileAndDropOneThatRefusesEveryone() {
        let sources = SourceSet([Self.remote("a.test"), Self.remote("b.test")])
        #expect(sources.bind(0).index == 0)
        #expect(sources.bind(1).index == 1)
        for attempt in 1...SourceSet.loneRefusalsToDrop {
            #expect(sources.refused(1, worker: 1))
            #expect(sources.isLive(1) == (attempt < SourceSet.loneRefusalsToDrop), "attempt \(attempt)")
            _ = sources.bindNow(1)
        }
        #expect(sources.snapshot[1].dropped == SourceSet.refusedEveryRequest)

        let limited = SourceSet([Self.remote("a.test"), Self.remote("b.test")])
        limited.allow([0: 4, 1: 0])
        for worker in 0..<3 { #expect(limited.bind(worker).index == 0) }
        #expect(limited.refused(0, worker: 2))
        #expect(limited.snapshot[0].capacity == 2)
        #expect(limited.isLive(0))
        for _ in 0..<3 { limited.served(0, bytes: 1_000, seconds: 0.01, complete: true) }
        #expect(limited.snapshot[0].capacity == 2)
        limited.served(0, bytes: 1_000, seconds: 0.01, complete: true)
        #expect(limited.snapshot[0].capacity == 3)
    }

    /// A source is measured from its connections' bytes between two samples, before any answer ends.
    @Test func sourcesAreMeasuredFromTheirConnectionsBytes() {
        let sources = SourceSet([Self.remote("a.test"), Self.remote("b.test")])
        for worker in 0..<4 { _ = sources.bind(worker) }
        let t0 = ContinuousClock.now
        sources.sample([0: 0, 1: 0, 2: 0, 3: 0], at: t0 + .milliseconds(30))
        // Source 0's two connections (0, 2) brought 1 MB in 100 ms, source 1's (1, 3) 100 kB.
        sources.sample(
            [0: 500_000, 1: 50_000, 2: 500_000, 3: 50_000], at: t0 + .milliseconds(130))
        let rates = sources.snapshot.map { $0.rate ?? 0 }
        #expect(abs(rates[0] - 5_000_000) < 1)
        #expect(abs(rates[1] - 500_000) < 1)
        #expect(sources.bind(4).index == 0)
    }

    @Test func aRefusalCapsTheSourceAndSendsTheConnectionElsewhere() {
        for worker in 0..<3 { _ = sources.bind(worker) }
        sources.served(0, bytes: 2_000_000, seconds: 1)
        sources.served(1, bytes: 100_000, seconds: 1)
        sources.served(2, bytes: 100_000, seconds: 1)
        #expect(sources.bind(3).index == 0)
        #expect(sources.refused(0, worker: 3))
        #expect(sources.snapshot[0].capacity == 1)
        #expect(sources.bind(3).index != 0)
        #expect(sources.bind(4).index != 0)
        #expect(sources.liveCount == 3)
    }

    @Test func theSourceWhoseBytesDifferedIsConvictedAndNeverTheLast() {
        let dropped = sources.convict([(2, 50..<100)])
        #expect(dropped.map(\.index) == [2])
        #expect(sources.snapshot[2].dropped?.contains("bytes 50-99 that differ") == true)
        // One that sent a bad piece alone is dropped at once; the last live one never.
        #expect(sources.blame([1], piece: 100..<200).map(\.index) == [1])
        #expect(sources.blame([0], piece: 200..<300).isEmpty)
        #expect(sources.snapshot[0].isLive)
        #expect(sources.liveCount == 1)
    }

    /// While a mirror is being probed, a connection that would be a fifth on the only source waits
    /// for the probe, and goes to the mirror it adds.
    @Test func aConnectionBeyondAFewWaitsForTheMirrorsProbe() async throws {
        let sources = SourceSet([Self.remote("a.test")])
        sources.expectProbes(1)
        for worker in 0..<4 { #expect(sources.bind(worker).index == 0) }
        // The binding blocks its thread, as a connection's does: never one of the pool's.
        let fifth = Task { await OwnThread.run { sources.bind(4, limit: .seconds(30)).index } }
        let waiting = await OwnThread.run {
            let deadline = Date().addingTimeInterval(20)
            while sources.waiting.load(ordering: .relaxed) == 0, Date() < deadline { usleep(1000) }
            return sources.waiting.load(ordering: .relaxed) == 1
        }
        #expect(waiting, "the fifth connection did not wait")
        sources.add(Self.remote("b.test"))
        sources.endProbe()
        #expect(await fifth.value == 1)
    }
}

/// Runs blocking work on a new thread and returns its result without holding a pool thread.
enum OwnThread {
    static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: work()) }.start()
        }
    }
}
