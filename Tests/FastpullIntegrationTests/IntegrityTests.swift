import FastpullFixtures
import Foundation
import Synchronization
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// Checksums through the whole pipeline: given ones, checksum files and server digests, corruption
/// caught in every part of the file, and what a mismatch leaves behind.
@Suite("Integrity against the fixture server")
struct IntegrityTests {
    let server: FixtureServer
    let folder = TemporaryFolder()

    init() throws {
        server = try FixtureServer()
    }

    /// Four connections and quick retries; segments of 1 MiB, so an 8 MiB file has several.
    static func configuration(_ checksums: [Checksum] = []) -> Configuration {
        var configuration = Configuration(checksums: checksums)
        configuration.connections.count = 4
        configuration.retries.baseDelay = .milliseconds(5)
        return configuration
    }

    static func digest(_ algorithm: Digest.Algorithm, size: Int, seed: UInt64 = 1) -> String {
        Digest.hex(Digest.compute(algorithm, of: FixtureContent.bytes(count: size, seed: seed)))
    }

    func fetch(_ path: String, configuration: Configuration, name: String = "out.bin") async throws -> Report
    {
        try await Fastpull.download(
            from: server.url(path), to: folder.url(name), configuration: configuration)
    }

    /// Runs a download expected to fail and returns its error.
    func failure(_ path: String, configuration: Configuration, name: String = "out.bin") async throws
        -> FastpullError
    {
        do {
            let report = try await fetch(path, configuration: configuration, name: name)
            Issue.record("expected a failure, got a report of \(report.size) bytes")
            return FastpullError(.internalError, "no failure")
        } catch let error as FastpullError {
            return error
        }
    }

    // MARK: - Corruption anywhere is caught

    static let corruptSize = 8 << 20
    static let probeURL = URL(string: "http://h.test/x")!

    @Test(
        "A flipped byte in the first, a middle or the last segment fails with the sha256 named",
        arguments: [100, corruptSize / 2 + 7, corruptSize - 1])
    func corruptionCaughtAgainstAGivenChecksum(offset: Int) async throws {
        let expected = Self.digest(.sha256, size: Self.corruptSize)
        let error = try await failure(
            "/gen/\(Self.corruptSize)?corrupt=\(offset)",
            configuration: Self.configuration([.sha256(expected)]))
        var bytes = FixtureContent.bytes(count: Self.corruptSize, seed: 1)
        bytes[offset] ^= 0xFF
        let actual = Digest.hex(Digest.compute(.sha256, of: bytes))
        #expect(error.code == .integrity)
        #expect(error.message.contains("sha256 mismatch"))
        #expect(error.message.contains("expected \(expected) (from the given checksum)"))
        #expect(error.message.contains("got \(actual)"))
        #expect(error.message.contains(folder.url("out.bin").path))
        // No output, no .part, no journal: nothing to resume into.
        #expect(folder.contents.isEmpty)
    }

    @Test(
        "Every algorithm is computed while downloading and catches corruption",
        arguments: [Digest.Algorithm.md5, .sha1, .sha512, .crc32c])
    func everyAlgorithmEndToEnd(algorithm: Digest.Algorithm) async throws {
        let size = 5 << 20
        let expected = Checksum(algorithm, hex: Self.digest(algorithm, size: size))
        let report = try await fetch("/gen/\(size)", configuration: Self.configuration([expected]))
        #expect(report.verifiedChecksums == [expected])
        #expect(report.digests[algorithm.name] == expected.hexValue)
        #expect(report.digests["sha256"] == Self.digest(.sha256, size: size))
        #expect(report.sha256 == Self.digest(.sha256, size: size))
        #expect(report.checks == [.init(expected: expected, source: .user, verdict: .matched)])

        let error = try await failure(
            "/gen/\(size)?corrupt=\(size - 3)", configuration: Self.configuration([expected]), name: "bad.bin"
        )
        #expect(error.code == .integrity)
        #expect(error.message.contains("\(algorithm.name) mismatch"))
        #expect(error.message.contains(expected.hexValue))
        #expect(folder.contents == ["out.bin"])
    }

    @Test func base64ChecksumsAreAccepted() async throws {
        let size = 1 << 20
        let bytes = FixtureContent.bytes(count: size, seed: 1)
        let md5 = try Checksum(parsing: "md5=" + Base64.encode(Digest.compute(.md5, of: bytes)))
        let report = try await fetch("/gen/\(size)", configuration: Self.configuration([md5]))
        #expect(report.verifiedChecksums == [.md5(Self.digest(.md5, size: size))])
    }

    @Test func aMalformedGivenChecksumFailsBeforeAnyByte() async throws {
        let error = try await failure("/gen/\(1 << 20)", configuration: Self.configuration([.sha256("abc")]))
        #expect(error.code == .usage)
        #expect(error.message.contains("'abc'"))
        #expect(server.stats.bodyBytesSent == 0)
        #expect(folder.contents.isEmpty)
    }

    @Test func streamingDownloadsAreVerifiedToo() async throws {
        let size = 3 << 20
        let md5 = Checksum.md5(Self.digest(.md5, size: size))
        let report = try await fetch("/gen/\(size)?no-ranges=1", configuration: Self.configuration([md5]))
        #expect(!report.rangesSupported)
        #expect(report.digests["md5"] == md5.hexValue)

        let error = try await failure(
            "/gen/\(size)?no-ranges=1&chunked=1&corrupt=12345", configuration: Self.configuration([md5]),
            name: "bad.bin")
        #expect(error.code == .integrity)
        #expect(error.message.contains("md5 mismatch"))
        #expect(folder.contents == ["out.bin"])
    }

    // MARK: - What a mismatch leaves

    @Test func keepPartialKeepsTheBytesButNotTheJournal() async throws {
        let size = 4 << 20
        let offset = size / 3
        var corrupted = FixtureContent.bytes(count: size, seed: 1)
        corrupted[offset] ^= 0xFF
        let path = "/gen/\(size)?corrupt=\(offset)"
        var configuration = Self.configuration([.sha256(Self.digest(.sha256, size: size))])
        configuration.integrity.keepsPartialOnMismatch = true
        let error = try await failure(path, configuration: configuration)
        #expect(error.code == .integrity)
        #expect(error.message.contains("kept in \(folder.url("out.bin.part").path)"))
        #expect(folder.contents == ["out.bin.part"])
        #expect(try Data(contentsOf: folder.url("out.bin.part")) == Data(corrupted))

        // The same URL again, now expecting the corrupted bytes: had the journal survived, this run
        // would resume; instead it starts over and fetches every byte.
        server.resetStats()
        let actual = Digest.hex(Digest.compute(.sha256, of: corrupted))
        let report = try await fetch(path, configuration: Self.configuration([.sha256(actual)]))
        #expect(report.resumedBytes == 0)
        // Every byte again (a little more if a slow connection was replaced on a busy machine).
        #expect(server.stats.bodyBytesSent >= Int64(size))
        #expect(folder.contents == ["out.bin"])
    }

    @Test func aMismatchAfterResumingDiscardsEverything() async throws {
        // A first run is paused after 1 MiB; the byte at offset 100 is bad and already on disk.
        let size = 4 << 20
        let path = "/gen/\(size)?corrupt=100&rate=\(700_000 / FaultRun.timeScale)"
        var configuration = Self.configuration([.sha256(Self.digest(.sha256, size: size))])
        configuration.connections.count = 2
        let download = Download(
            from: server.url(path), to: folder.url("out.bin"), configuration: configuration)
        let first = Task { try await download.run() }
        await download.whenWritten(atLeast: 1 << 20) { download.pause() }
        let paused = await first.result
        #expect(throws: FastpullError.self) { try paused.get() }
        #expect(folder.contents.contains("out.bin.part.fastpull"))

        // The resumed run rehashes the kept prefix, catches the bad byte and leaves nothing behind.
        let error = try await failure(path, configuration: configuration)
        #expect(error.code == .integrity)
        #expect(error.message.contains("sha256 mismatch"))
        #expect(folder.contents.isEmpty)
    }

    // MARK: - Checksum files

    /// `HEX NAME` lines with CRLF ends (`NAME` carries its own `*` or space marker).
    static func listing(_ entries: [(String, String)]) -> String {
        entries.map { "\($0.0) \($0.1)" }.joined(separator: "\r\n") + "\r\n"
    }

    @Test func checksumFileEntryForTheOutputNameWithCRLFAndBinaryMarkers() async throws {
        let size = 2 << 20
        let sha256 = Self.digest(.sha256, size: size)
        let text =
            "# release checksums\r\n"
            + Self.listing([
                (Self.digest(.sha256, size: size, seed: 2), "*other.bin"),
                (sha256, "*out.bin"),
                (String(repeating: "0", count: 64), " spaced.bin"),
            ])
        var configuration = Self.configuration()
        configuration.integrity.checksumFiles = [.init(source: "/srv/SHA256SUMS", text: text)]
        let report = try await fetch("/gen/\(size)", configuration: configuration)
        #expect(report.verifiedChecksums == [.sha256(sha256)])
        #expect(
            report.checks == [
                .init(expected: .sha256(sha256), source: .checksumFile("/srv/SHA256SUMS"), verdict: .matched)
            ])
    }

    @Test func checksumFileEntryForTheURLsName() async throws {
        let size = 1 << 20
        let md5 = Self.digest(.md5, size: size)
        let text = "\(Self.digest(.md5, size: 7))  other\n\(md5)  \(size)\n"
        var configuration = Self.configuration()
        configuration.integrity.checksumFiles = [.init(source: "MD5SUMS", text: text)]
        let report = try await fetch("/gen/\(size)", configuration: configuration, name: "renamed.bin")
        #expect(report.digests["md5"] == md5)
        #expect(report.checks.map(\.source) == [.checksumFile("MD5SUMS")])
    }

    @Test func checksumFileMismatchNamesTheFile() async throws {
        let size = 2 << 20
        var configuration = Self.configuration()
        let text = "\(Self.digest(.sha512, size: size))  out.bin\n"
        configuration.integrity.checksumFiles = [.init(source: "https://example.org/SHA512SUMS", text: text)]
        let error = try await failure("/gen/\(size)?corrupt=\(size - 1)", configuration: configuration)
        #expect(error.code == .integrity)
        #expect(error.message.contains("sha512 mismatch"))
        #expect(error.message.contains("(from checksum file https://example.org/SHA512SUMS)"))
        #expect(folder.contents.isEmpty)
    }

    @Test func checksumFileWithoutAnEntryFailsBeforeAnyByte() async throws {
        var configuration = Self.configuration()
        let text =
            "\(String(repeating: "1", count: 64))  a.bin\n\(String(repeating: "2", count: 64))  b.bin\n"
        configuration.integrity.checksumFiles = [.init(source: "SUMS", text: text)]
        let error = try await failure("/gen/\(1 << 20)", configuration: configuration)
        #expect(error.code == .usage)
        #expect(error.message.contains("SUMS has no entry for 'out.bin'"))
        #expect(server.stats.bodyBytesSent == 0)
        #expect(folder.contents.isEmpty)

        configuration.integrity.checksumFiles = [.init(source: "empty.txt", text: "# nothing here\n")]
        let empty = try await failure("/gen/\(1 << 20)", configuration: configuration)
        #expect(empty.code == .usage)
        #expect(empty.message.contains("holds no checksum lines"))
    }

    // MARK: - The report

    @Test func theReportListsEveryDigestAndCheck() async throws {
        let size = 3 << 20
        let sha256 = Self.digest(.sha256, size: size)
        let crc = Self.digest(.crc32c, size: size)
        var configuration = Self.configuration([.sha256(sha256), .crc32c(crc.uppercased())])
        configuration.integrity.checksumFiles = [.init(source: "x.sha256", text: "\(sha256)\n")]
        let report = try await fetch("/gen/\(size)", configuration: configuration)
        #expect(report.digests == ["sha256": sha256, "crc32c": crc])
        #expect(
            report.checks == [
                .init(expected: .sha256(sha256), source: .user, verdict: .matched),
                .init(expected: .crc32c(crc), source: .user, verdict: .matched),
                .init(expected: .sha256(sha256), source: .checksumFile("x.sha256"), verdict: .matched),
            ])
        #expect(report.verifiedChecksums == [.sha256(sha256), .crc32c(crc)])
        #expect(report.checks[2].description == "sha256=\(sha256) from checksum file x.sha256: matched")
        #expect(report.transferSeconds > 0 && report.transferSeconds <= report.seconds)
        #expect(report.hashTailSeconds >= 0 && report.hashTailSeconds <= report.seconds)
    }

    @Test func withoutChecksumsOnlySHA256IsComputed() async throws {
        let report = try await fetch("/gen/\(1 << 20)", configuration: Self.configuration())
        #expect(report.digests == ["sha256": Self.digest(.sha256, size: 1 << 20)])
        #expect(report.checks.isEmpty)
        #expect(report.verifiedChecksums.isEmpty)
    }
}

/// Server digests, end to end, from a small responder that sends the headers the fixture server does
/// not: `Repr-Digest`, `x-goog-hash`, `x-amz-checksum-*`, `X-Linked-Etag` on a redirect.
@Suite("Server digests through the pipeline")
struct ServerDigestIntegrationTests {
    let folder = TemporaryFolder()
    static let size = 3 << 20
    static let body = FixtureContent.bytes(count: size, seed: 5)

    static func base64(_ algorithm: Digest.Algorithm, _ bytes: [UInt8] = body) -> String {
        Base64.encode(Digest.compute(algorithm, of: bytes))
    }

    static func configuration() -> Configuration {
        var configuration = Configuration()
        configuration.connections.count = 4
        configuration.retries.limit = 1
        configuration.retries.baseDelay = .milliseconds(5)
        return configuration
    }

    func run(
        _ responder: DigestResponder, path: String = "/file", configuration: Configuration = configuration()
    )
        async throws -> Report
    {
        try await Fastpull.download(
            from: responder.url(path), to: folder.url("file.bin"), configuration: configuration)
    }

    @Test func reprDigestIsVerifiedAndTheProbeAsksForIt() async throws {
        let sha256 = Self.base64(.sha256)
        let responder = try DigestResponder(routes: [
            "/file": .init(body: Self.body, headers: [("Repr-Digest", "sha-256=:\(sha256):")])
        ])
        defer { responder.stop() }
        let report = try await run(responder)
        let expected = Checksum.sha256(Digest.hex(Digest.compute(.sha256, of: Self.body)))
        #expect(
            report.checks == [.init(expected: expected, source: .header("Repr-Digest"), verdict: .matched)])
        #expect(report.verifiedChecksums == [expected])
        // The probe is the download's first GET, for all of it.
        let probe = try #require(responder.requests.first)
        #expect(probe.hasPrefix("GET /file HTTP/1.1\r\n") && probe.contains("\r\nRange: bytes=0-\r\n"))
        #expect(probe.contains("\r\nWant-Repr-Digest: sha-256=10, sha-512=3\r\n"))
        #expect(probe.contains("\r\nWant-Digest: "))
        // Segment requests do not ask for digests.
        #expect(responder.requests.dropFirst().allSatisfy { !$0.contains("Want-Repr-Digest") })
    }

    @Test func aWrongServerDigestFailsNamingTheHeader() async throws {
        let wrong = Self.base64(.sha256, [1, 2, 3])
        let responder = try DigestResponder(routes: [
            "/file": .init(body: Self.body, headers: [("Repr-Digest", "sha-256=:\(wrong):")])
        ])
        defer { responder.stop() }
        await #expect {
            _ = try await run(responder)
        } throws: { error in
            let error = try #require(fastpullError(error))
            return error.code == .integrity && error.message.contains("(from Repr-Digest header)")
                && error.message.contains("sha256 mismatch")
        }
        #expect(folder.contents.isEmpty)
    }

    @Test func googleHashGivesMD5AndCRC32C() async throws {
        let crc = Base64.encode(Digest.compute(.crc32c, of: Self.body))
        let responder = try DigestResponder(routes: [
            "/file": .init(
                body: Self.body,
                headers: [("x-goog-hash", "crc32c=\(crc)"), ("x-goog-hash", "md5=\(Self.base64(.md5))")])
        ])
        defer { responder.stop() }
        let report = try await run(responder)
        #expect(report.digests["md5"] == Digest.hex(Digest.compute(.md5, of: Self.body)))
        #expect(report.digests["crc32c"] == Digest.hex(Digest.compute(.crc32c, of: Self.body)))
        #expect(report.checks.map(\.verdict) == [.matched, .matched])
        #expect(report.checks.allSatisfy { $0.source == .header("x-goog-hash") })
    }

    @Test(.timeLimit(.minutes(1)))
    func anUntrustedDigestIsIgnoredReportedAndWarnedAbout() async throws {
        let responder = try DigestResponder(routes: [
            "/file": .init(
                body: Self.body, headers: [("x-amz-checksum-sha256", "\(Self.base64(.sha256, [9]))-3")])
        ])
        defer { responder.stop() }
        let download = Download(
            from: responder.url("/file"), to: folder.url("file.bin"), configuration: Self.configuration())
        let warnings = Task {
            var texts: [String] = []
            for await event in download.events {
                if case .warning(let text) = event.detail { texts.append(text) }
            }
            return texts
        }
        let report = try await download.run()
        // Said once (a small file read from the probe's answer works its expectations out once).
        let texts = await warnings.value
        #expect(texts.count == 1, "\(texts)")
        let text = texts.first ?? ""
        #expect(text.contains("x-amz-checksum-sha256"))
        #expect(text.contains("composite"))
        #expect(report.verifiedChecksums.isEmpty)
        #expect(report.checks.count == 1)
        #expect(report.checks.first?.source == .header("x-amz-checksum-sha256"))
        #expect(report.checks.first?.expected == nil)
        if case .ignored(let reason) = report.checks.first?.verdict {
            #expect(reason.contains("composite"))
        } else {
            Issue.record("expected an ignored check, got \(report.checks)")
        }
        #expect(folder.contents == ["file.bin"])
    }

    @Test func linkedETagOnARedirectHopIsVerified() async throws {
        let hex = Digest.hex(Digest.compute(.sha256, of: Self.body))
        let responder = try DigestResponder(routes: [
            "/resolve": .init(redirect: "/blob", headers: [("X-Linked-Etag", "\"\(hex)\"")]),
            "/blob": .init(body: Self.body, headers: [("ETag", "\"65a1b2c3-300000\"")]),
        ])
        defer { responder.stop() }
        let report = try await run(responder, path: "/resolve")
        #expect(report.finalURL.path == "/blob")
        // The nginx-style ETag is no digest and is not reported as an ignored one.
        #expect(
            report.checks == [
                .init(expected: .sha256(hex), source: .header("X-Linked-Etag"), verdict: .matched)
            ])

        let wrong = try DigestResponder(routes: [
            "/resolve": .init(
                redirect: "/blob", headers: [("X-Linked-Etag", "\"\(String(repeating: "e", count: 64))\"")]),
            "/blob": .init(body: Self.body, headers: []),
        ])
        defer { wrong.stop() }
        // Over the file the first run saved (another server's, so never kept as it is).
        var replacing = Self.configuration()
        replacing.resume.replacesExistingFile = true
        await #expect {
            _ = try await run(wrong, path: "/resolve", configuration: replacing)
        } throws: { error in
            let error = try #require(fastpullError(error))
            return error.code == .integrity && error.message.contains("X-Linked-Etag header")
        }
    }

    @Test func contentMD5OfAWholeStreamedResponse() async throws {
        let responder = try DigestResponder(routes: [
            "/file": .init(body: Self.body, headers: [("Content-MD5", Self.base64(.md5))], ranges: false)
        ])
        defer { responder.stop() }
        let report = try await run(responder)
        #expect(!report.rangesSupported)
        #expect(report.checks.map(\.source) == [.header("Content-MD5")])
        #expect(report.checks.map(\.verdict) == [.matched])
    }
}

/// What the probe keeps of the digests in each response head it sees.
@Suite("Probe server digests")
struct ProbeDigestLogTests {
    static let sha256 = String(repeating: "ab", count: 32)

    static func head(_ status: Int, _ fields: [(String, String)]) -> ResponseHead {
        ResponseHead(
            versionMajor: 1, versionMinor: 1, status: status, reason: "",
            headers: HTTPHeaders(fields.map { (name: $0.0, value: $0.1) }))
    }

    @Test func redirectHopsContributeOnlyTheirLinkedETag() {
        var log = Probe.DigestLog()
        log.record(
            Self.head(302, [("X-Linked-Etag", "\"\(Self.sha256)\""), ("Repr-Digest", "sha-256=:AAAA:")]),
            method: "HEAD", url: IntegrityTests.probeURL)
        #expect(log.trusted == [ChecksumExpectation(.sha256(Self.sha256), source: .header("X-Linked-Etag"))])
        #expect(log.ignored.isEmpty)
    }

    @Test func aRangeProbeKeepsReprDigestButDropsPartialFieldsQuietly() {
        let sha = Base64.encode([UInt8](repeating: 0xab, count: 32))
        var log = Probe.DigestLog()
        log.record(
            Self.head(
                206,
                [
                    ("Content-Range", "bytes 0-0/100"), ("Repr-Digest", "sha-256=:\(sha):"),
                    ("Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg=="), ("ETag", "\"5f3a-64\""),
                ]),
            method: "GET", url: IntegrityTests.probeURL)
        #expect(log.trusted == [ChecksumExpectation(.sha256(Self.sha256), source: .header("Repr-Digest"))])
        #expect(log.ignored.isEmpty)
    }

    @Test func repeatsAreKeptOnceAndUntrustedFieldsListed() {
        var log = Probe.DigestLog()
        let head = Self.head(
            200,
            [
                ("ETag", "\"\(Self.sha256)\""), ("Content-Encoding", "identity"),
                ("x-amz-checksum-crc32c", "AAAAAA==-2"),
            ])
        log.record(head, method: "HEAD", url: IntegrityTests.probeURL)
        log.record(head, method: "GET", url: IntegrityTests.probeURL)
        #expect(log.trusted == [ChecksumExpectation(.sha256(Self.sha256), source: .header("ETag"))])
        #expect(log.ignored.map(\.header) == ["x-amz-checksum-crc32c"])
        let remote = log.applied(
            to: RemoteFile(
                url: URL(string: "http://h/x")!, finalURL: URL(string: "http://h/x")!, size: 1,
                acceptsRanges: true), head: head)
        #expect(remote.serverDigests == log.trusted)
        #expect(remote.ignoredServerDigests == log.ignored)
    }

    @Test func anEncodedResponseTrustsNothing() {
        var log = Probe.DigestLog()
        log.record(
            Self.head(200, [("Content-Encoding", "gzip"), ("Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg==")]),
            method: "HEAD", url: IntegrityTests.probeURL)
        #expect(log.trusted.isEmpty)
        #expect(log.ignored.map(\.header) == ["Content-MD5"])
    }

    @Test func theProbeRequestCarriesTheWantHeaders() {
        let url = URL(string: "http://example.org/a")!
        let request = Requests.make(
            "HEAD", url, origin: Origin(url)!, extraHeaders: ServerDigests.probeRequestHeaders)
        #expect(request.headers["Want-Repr-Digest"] == "sha-256=10, sha-512=3")
        #expect(request.headers["Want-Digest"] != nil)
        #expect(Requests.make("GET", url, origin: Origin(url)!).headers["Want-Repr-Digest"] == nil)
    }
}

/// The streaming hasher: every algorithm in one pass, and the pipeline's choice reaching it.
@Suite("Prefix hasher")
struct PrefixHasherTests {
    let folder = TemporaryFolder()

    @Test func computesEveryAskedAlgorithmInOnePass() throws {
        let size = 3 << 20 + 17
        let bytes = FixtureContent.bytes(count: size, seed: 3)
        let file = try OutputFile(creatingAt: folder.url("h.part").path)
        try bytes.withUnsafeBytes { try file.write($0, at: 0) }
        // Every byte already written, as on a resume that kept the whole file.
        let scheduler = Scheduler(segments: [Segment(start: 0, end: Int64(size), written: Int64(size))])
        let digests = PrefixHasher.Digests([.sha256, .md5, .crc32c, .md5])
        #expect(digests.algorithms == [.sha256, .md5, .crc32c])
        let hasher = PrefixHasher(file: file, scheduler: scheduler, size: Int64(size), digests: digests)
        let sha256 = try hasher.run()
        #expect(sha256 == Digest.compute(.sha256, of: bytes))
        #expect(
            digests.values == [
                .sha256: Digest.compute(.sha256, of: bytes), .md5: Digest.compute(.md5, of: bytes),
                .crc32c: Digest.compute(.crc32c, of: bytes),
            ])
        #expect(digests.lastByteAt != nil)
    }

    /// With nothing to compute, the hasher only follows the written prefix: it returns once every byte
    /// is in, with no digest, and tells the scheduler how far it got (the horizon waits for it).
    @Test func withNothingToComputeItFollowsTheFrontierOnly() throws {
        let size: Int64 = 3 << 20
        let file = try OutputFile(creatingAt: folder.url("n.part").path)
        let scheduler = Scheduler(segments: [Segment(start: 0, end: size, written: size)])
        let digests = PrefixHasher.Digests()
        let hasher = PrefixHasher(file: file, scheduler: scheduler, size: size, digests: digests)
        #expect(try hasher.run() == [])
        #expect(digests.values == [:])
        #expect(digests.lastByteAt != nil)
        #expect(scheduler.hashedBytes == size)
    }

    /// Mappings that start off a page boundary and end mid-chunk still hand over every byte once.
    @Test(arguments: [Int64(1 << 20) + 5, 4096, 3 << 20])
    func hashesThroughMappingsOfAnySize(mappingSize: Int64) throws {
        let size = 3 << 20 + 17
        let bytes = FixtureContent.bytes(count: size, seed: 4)
        let file = try OutputFile(creatingAt: folder.url("m.part").path)
        try bytes.withUnsafeBytes { try file.write($0, at: 0) }
        let scheduler = Scheduler(segments: [Segment(start: 0, end: Int64(size), written: Int64(size))])
        var hasher = PrefixHasher(
            file: file, scheduler: scheduler, size: Int64(size), digests: PrefixHasher.Digests([.sha256]))
        hasher.mappingSize = mappingSize
        hasher.chunkSize = 300_000
        #expect(try hasher.run() == Digest.compute(.sha256, of: bytes))
    }

    @Test func aMappedRegionShowsTheFileBytesAtUnalignedOffsets() throws {
        let bytes = FixtureContent.bytes(count: 20_000, seed: 5)
        let file = try OutputFile(creatingAt: folder.url("r.part").path)
        try bytes.withUnsafeBytes { try file.write($0, at: 0) }
        let region = try #require(file.map(5_000..<17_001))
        #expect(Array(region.bytes(5_000..<17_001)) == Array(bytes[5_000..<17_001]))
        #expect(Array(region.bytes(8_191..<8_193)) == Array(bytes[8_191..<8_193]))
        #expect(file.map(100..<100) == nil)
    }
}

/// A minimal loopback HTTP/1.1 server for digest headers the fixture server does not send: each route
/// is a body (HEAD, GET, one `Range: bytes=a-b` or `bytes=a-`, keep-alive) or a 302, with extra header
/// fields.
/// Records every request head it reads.
final class DigestResponder: Sendable {
    struct Route: Sendable {
        var body: [UInt8] = []
        var headers: [(String, String)] = []
        var redirect: String? = nil
        var ranges = true
        /// Whether `bytes=a-` is understood; a server that parses only `bytes=a-b` answers it with the
        /// whole file.
        var openEndedRanges = true

        init(body: [UInt8], headers: [(String, String)], ranges: Bool = true, openEndedRanges: Bool = true) {
            self.body = body
            self.headers = headers
            self.ranges = ranges
            self.openEndedRanges = openEndedRanges
        }

        init(redirect: String, headers: [(String, String)]) {
            self.redirect = redirect
            self.headers = headers
        }
    }

    let port: Int
    private let listener: Int32
    private let routes: [String: Route]
    /// Requests seen, open clients, and whether the server stopped and the accept thread closed the
    /// listener. A descriptor is closed only by its own thread, under this lock, and shut down by
    /// `stop()` only while listed here: no thread ever touches a number another socket was given.
    private let state = Mutex<(requests: [String], clients: Set<Int32>, stopped: Bool, listenerClosed: Bool)>(
        ([], [], false, false))

    init(routes: [String: Route]) throws {
        self.routes = routes
        let (fd, port) = try LoopbackListener.open()
        listener = fd
        self.port = port
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// Every request head received, in order.
    var requests: [String] { state.withLock { $0.requests } }

    /// Shuts the listener and every client down; each closes as its thread ends.
    func stop() {
        state.withLock { state in
            state.stopped = true
            for client in state.clients { shutdown(client, Int32(SHUT_RDWR)) }
            if !state.listenerClosed { shutdown(listener, Int32(SHUT_RDWR)) }
        }
    }

    deinit { stop() }

    private func acceptLoop() {
        defer {
            state.withLock { state in
                close(listener)
                state.listenerClosed = true
            }
        }
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            let stopped = state.withLock { state in
                if state.stopped {
                    close(client)
                } else {
                    state.clients.insert(client)
                }
                return state.stopped
            }
            if stopped { return }
            Thread.detachNewThread { [self] in
                serve(client)
                state.withLock { state in
                    state.clients.remove(client)
                    close(client)
                }
            }
        }
    }

    private func serve(_ client: Int32) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let terminator: [UInt8] = Array("\r\n\r\n".utf8)
            while pending.firstRange(of: terminator) == nil {
                let count = buffer.withUnsafeMutableBytes { read(client, $0.baseAddress, $0.count) }
                guard count > 0 else { return }
                pending += buffer[0..<count]
            }
            let end = pending.firstRange(of: terminator)!.upperBound
            let head = String(decoding: pending[0..<end], as: UTF8.self)
            pending.removeFirst(end)
            state.withLock { $0.requests.append(head) }
            guard write(client, response(to: head)) else { return }
        }
    }

    private func response(to head: String) -> [UInt8] {
        let lines = head.components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        let method = parts.first.map(String.init) ?? ""
        let path = parts.count > 1 ? String(parts[1].prefix { $0 != "?" }) : "/"
        guard let route = routes[path] else {
            return Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".utf8)
        }
        var fields = route.headers.map { "\($0.0): \($0.1)\r\n" }.joined()
        if let redirect = route.redirect {
            return Array(
                "HTTP/1.1 302 Found\r\nLocation: \(redirect)\r\n\(fields)Content-Length: 0\r\n\r\n".utf8)
        }
        let size = route.body.count
        var range = 0..<size
        var status = "200 OK"
        if route.ranges {
            fields += "Accept-Ranges: bytes\r\n"
            let rangeLine = lines.first { $0.lowercased().hasPrefix("range: bytes=") }
            if let rangeLine {
                let spec = rangeLine.dropFirst("range: bytes=".count)
                var bounds = spec.split(separator: "-").compactMap { Int($0) }
                if route.openEndedRanges, spec.hasSuffix("-"), bounds.count == 1 { bounds.append(size - 1) }
                if bounds.count == 2, bounds[0] <= bounds[1], bounds[1] < size {
                    range = bounds[0]..<(bounds[1] + 1)
                    status = "206 Partial Content"
                    fields += "Content-Range: bytes \(bounds[0])-\(bounds[1])/\(size)\r\n"
                }
            }
        }
        let text = "HTTP/1.1 \(status)\r\n\(fields)Content-Length: \(range.count)\r\n\r\n"
        return Array(text.utf8) + (method == "HEAD" ? [] : Array(route.body[range]))
    }

    private func write(_ client: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                let count = Glibc.write(client, raw.baseAddress! + done, raw.count - done)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return false }
                done += count
            }
            return true
        }
    }
}
