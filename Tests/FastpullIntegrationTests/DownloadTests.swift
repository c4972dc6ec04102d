import FastpullFixtures
import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine

@Suite("Download against the fixture server")
struct DownloadTests {
    let server: FixtureServer
    let folder = TemporaryFolder()

    init() throws {
        server = try FixtureServer()
    }

    func fetch(_ path: String, configuration: Configuration = .quickRetries(), name: String = "out.bin")
        async throws -> (Report, URL)
    {
        let destination = folder.url(name)
        let report = try await Fastpull.download(
            from: server.url(path), to: destination, configuration: configuration)
        return (report, destination)
    }

    @Test(arguments: [0, 1, (1 << 20) + 1])
    func smallSizesAreByteIdentical(size: Int) async throws {
        let (report, file) = try await fetch("/gen/\(size)")
        #expect(report.size == Int64(size))
        #expect(try Data(contentsOf: file) == Data(FixtureContent.bytes(count: size, seed: 1)))
        #expect(report.sha256 == Expected.sha256(size: size))
        #expect(folder.contents == ["out.bin"])
    }

    /// A file smaller than a window takes one request: the probe is the download's first GET
    /// (`Range: bytes=0-`), and its answer is the file.
    @Test(arguments: [1, 100_000, (1 << 20) - 1])
    func aSmallFileTakesOneRequest(size: Int) async throws {
        let (report, file) = try await fetch("/gen/\(size)?seed=3")
        #expect(try Data(contentsOf: file) == Data(FixtureContent.bytes(count: size, seed: 3)))
        #expect(report.rangesSupported)
        #expect(server.stats.requests == 1)
        #expect(server.stats.bodyBytesSent == Int64(size))
    }

    /// The probe's answer that holds a whole small file is read on that one connection, hashed as it
    /// passes, without the scheduler and its threads: the trace shows one window, the whole file,
    /// taken from that answer. A larger file goes through the scheduler, whose windows say how each
    /// was assigned.
    @Test(arguments: [(100_000, true), (Int(Pipeline.largestUnjournaledFile), true), (3 << 20, false)])
    func theProbesAnswerHoldingASmallFileIsTheDownload(size: Int, wholeAnswer: Bool) async throws {
        var configuration = Configuration.quickRetries()
        configuration.diagnostics.traceFile = folder.path + "/trace.ndjson"
        let (report, file) = try await fetch("/gen/\(size)?seed=5", configuration: configuration)
        #expect(try Data(contentsOf: file) == Data(FixtureContent.bytes(count: size, seed: 5)))
        #expect(report.sha256 == Expected.sha256(size: size, seed: 5))
        #expect(report.rangesSupported)
        let windows = try String(contentsOfFile: folder.path + "/trace.ndjson", encoding: .utf8)
            .split(separator: "\n").filter { $0.contains("\"event\":\"window\"") }
        if wholeAnswer {
            #expect(windows.count == 1, "\(windows)")
            #expect(
                windows.first?.hasSuffix(
                    "\"conn\":0,\"start\":0,\"end\":\(size),\"how\":\"whole answer\",\"source\":0}") == true,
                "\(windows)")
            #expect(server.stats.requests == 1)
        } else {
            #expect(!windows.isEmpty && windows.allSatisfy { !$0.contains("whole answer") }, "\(windows)")
        }
    }

    /// Without ``Configuration/Integrity/computesSHA256`` a download computes only what its checksums need: none
    /// for a file nothing checks (an empty `sha256`, no digests, no SHA-256 in its origin record), an
    /// MD5 for an MD5 checksum (verified), and the SHA-256 when the checksum is one. Over the scheduler
    /// (4 MiB) and over the probe's answer alone (100 kB).
    @Test(arguments: [4 << 20, 100_000])
    func withoutSHA256OnlyWhatIsCheckedIsComputed(size: Int) async throws {
        let bytes = FixtureContent.bytes(count: size, seed: 8)
        var configuration = Configuration.quickRetries()
        configuration.integrity.computesSHA256 = false
        let (plain, file) = try await fetch(
            "/gen/\(size)?seed=8", configuration: configuration, name: "a.bin")
        #expect(try Data(contentsOf: file) == Data(bytes))
        #expect(plain.sha256 == "")
        #expect(plain.digests == [:])
        #expect(OriginRecord.read(path: file.path)?.sha256 == "")

        let md5 = Digest.hex(Digest.compute(.md5, of: bytes))
        configuration.integrity.checksums = [.md5(md5)]
        let (checked, _) = try await fetch("/gen/\(size)?seed=8", configuration: configuration, name: "b.bin")
        #expect(checked.verifiedChecksums == [.md5(md5)])
        #expect(checked.digests == ["md5": md5])
        #expect(checked.sha256 == "")

        let sha256 = Expected.sha256(size: size, seed: 8)
        configuration.integrity.checksums = [.sha256(sha256)]
        let (asked, _) = try await fetch("/gen/\(size)?seed=8", configuration: configuration, name: "c.bin")
        #expect(asked.verifiedChecksums == [.sha256(sha256)])
        #expect(asked.sha256 == sha256)
    }

    /// A small file's answer cut short is asked for again, and the file is the server's, byte for
    /// byte, with the hash over the bytes kept (not the cut answer's and the next one's together).
    @Test func aSmallFilesCutAnswerIsFetchedAgain() async throws {
        let size = 600_000
        let (report, file) = try await fetch("/gen/\(size)?seed=6&drop-after=200000&drops=1")
        #expect(try Data(contentsOf: file) == Data(FixtureContent.bytes(count: size, seed: 6)))
        #expect(report.sha256 == Expected.sha256(size: size, seed: 6))
        #expect(report.retries == 1)
        #expect(server.stats.requests == 2)
        #expect(folder.contents == ["out.bin"])
    }

    /// Each connection is held to 12 MiB/s, so that what one connection gets done does not depend on
    /// how loaded the machine is: unpaced, the probe's open-ended answer could carry the whole file on
    /// loopback before the seven other connections had their first answers on a busy machine (then
    /// there was one segment), and connections that fell behind were cut and reconnected.
    ///
    /// Keep-alive: every TCP connection beyond the eight is one the trace explains (a window cut
    /// with its answer unread, a stall, a retry), however loaded the machine is; a client that
    /// opened a connection per request would have many more, unexplained.
    @Test func sixtyFourMebibytesOverEightConnections() async throws {
        let size = 64 << 20
        var configuration = Configuration.quickRetries()
        configuration.diagnostics.traceFile = folder.path + "/trace.ndjson"
        let (report, file) = try await fetch(
            "/gen/\(size)?seed=7&rate=\(12 << 20)", configuration: configuration)
        let expected = Expected.sha256(size: size, seed: 7)
        #expect(report.sha256 == expected)
        #expect(try Expected.sha256(ofFile: file) == expected)
        #expect(report.connections == 8)
        #expect(report.segments > 8)
        #expect(report.rangesSupported)
        #expect(report.bytesFetched == Int64(size))
        let trace = try String(contentsOfFile: folder.path + "/trace.ndjson", encoding: .utf8)
            .split(separator: "\n")
        let opened = trace.filter { $0.contains("\"event\":\"open\"") }.count
        let reconnects = trace.filter {
            ($0.contains("\"event\":\"cut\"") && $0.contains("\"closed\":true"))
                || $0.contains("\"event\":\"stall\"") || $0.contains("\"event\":\"retry\"")
        }.count
        #expect(opened == 8)
        #expect(
            server.stats.connections <= opened + reconnects,
            "\(server.stats.connections) connections, \(reconnects) reconnects in the trace")
        #expect(server.stats.requests > server.stats.connections)
        // A window cut from a connection that fell behind may close it with bytes in flight; the
        // rest of the file is sent once.
        #expect(server.stats.bodyBytesSent <= Int64(size) + Int64(size / 8))
    }

    @Test func checksumGivenAndMatching() async throws {
        let size = 3 << 20
        let expected = Expected.sha256(size: size)
        let configuration = Configuration(checksums: [.sha256(expected.uppercased())])
        let (report, _) = try await fetch("/gen/\(size)", configuration: configuration)
        #expect(report.verifiedChecksums == [.sha256(expected.uppercased())])
    }

    @Test func checksumMismatchLeavesNoFile() async throws {
        let wrong = String(repeating: "0", count: 64)
        let configuration = Configuration(checksums: [.sha256(wrong)])
        await #expect {
            _ = try await fetch("/gen/\(2 << 20)", configuration: configuration)
        } throws: { error in
            let error = try #require(fastpullError(error))
            return error.code == .integrity && error.message.contains("expected \(wrong)")
                && error.message.contains("sha256")
        }
        #expect(folder.contents.isEmpty)
    }

    @Test func droppedConnectionsResumeAtTheirOffset() async throws {
        let size = 8 << 20
        // Every one of the first 6 responses is cut after 300 000 bytes.
        let (report, file) = try await fetch("/gen/\(size)?drop-after=300000&drops=6")
        #expect(try Expected.sha256(ofFile: file) == Expected.sha256(size: size))
        // Each cut response is retried, unless the scheduler replaced that connection as stalled or
        // slow in the same moment (it then counts as that, not as a retry), which a loaded machine
        // makes happen for one or two of the six.
        #expect(report.retries >= 4, "\(report.retries) retries")
        // Nothing fetched twice: each retry starts where the cut left off.
        #expect(report.bytesFetched == Int64(size))
        // What the server sent beyond the file: at most a cut's rest per connection (a steal that cuts
        // a window in flight drops up to that much, more often on a loaded machine), never the
        // dropped responses' bytes again.
        #expect(server.stats.bodyBytesSent <= Int64(size) + 8 * SegmentFetcher.drainLimit)
    }

    @Test func serverIgnoringRangesFallsBackToOneStream() async throws {
        let size = 5 << 20
        let (report, file) = try await fetch("/gen/\(size)?no-ranges=1")
        #expect(!report.rangesSupported)
        #expect(report.connections == 1)
        #expect(try Expected.sha256(ofFile: file) == Expected.sha256(size: size))
        #expect(report.sha256 == Expected.sha256(size: size))
    }

    @Test func chunkedWithoutLengthIsStreamedAndDecoded() async throws {
        let size = (2 << 20) + 333
        let (report, file) = try await fetch("/gen/\(size)?chunked=1&no-ranges=1")
        #expect(report.size == Int64(size))
        #expect(!report.rangesSupported)
        #expect(try Expected.sha256(ofFile: file) == Expected.sha256(size: size))
    }

    @Test func headRefusedFallsBackToARangedGet() async throws {
        let size = 3 << 20
        let (report, file) = try await fetch("/gen/\(size)?head=405")
        #expect(report.rangesSupported)
        #expect(try Expected.sha256(ofFile: file) == Expected.sha256(size: size))
    }

    @Test func redirectChainIsFollowedAndPinned() async throws {
        let size = 2 << 20
        let (report, file) = try await fetch("/redirect/4/gen/\(size)")
        #expect(report.finalURL.path == "/gen/\(size)")
        #expect(try Expected.sha256(ofFile: file) == Expected.sha256(size: size))
    }

    @Test func tooManyRedirectsFail() async throws {
        await #expect {
            _ = try await fetch("/redirect/11/gen/10")
        } throws: { error in
            let error = try #require(fastpullError(error))
            return error.code == .httpStatus && error.message.contains("redirects")
        }
        #expect(folder.contents.isEmpty)
    }

    @Test func notFoundIsAClearError() async throws {
        await #expect {
            _ = try await fetch("/gen/100?status=404")
        } throws: { error in
            let error = try #require(fastpullError(error))
            return error.code == .httpStatus && error.message.contains("404")
                && error.message.contains(server.baseURL.absoluteString)
        }
        #expect(folder.contents.isEmpty)
    }

    @Test func serverErrorIsRetriedThenReported() async throws {
        await #expect {
            _ = try await fetch("/gen/100?status=500", configuration: .quickRetries(2))
        } throws: { error in
            let error = try #require(fastpullError(error))
            return error.code == .httpStatus && error.message.contains("500")
        }
        // The first try and two retries.
        #expect(server.stats.requests == 3)
    }

    @Test func transientServiceUnavailableIsRetried() async throws {
        let size = 2 << 20
        let (report, file) = try await fetch("/gen/\(size)?status=503&statuses=2&retry-after=0")
        #expect(report.retries >= 2)
        #expect(try Expected.sha256(ofFile: file) == Expected.sha256(size: size))
    }

    @Test func wrongContentRangeNeverReachesTheFile() async throws {
        await #expect {
            _ = try await fetch("/gen/\(4 << 20)?bad-range=1", configuration: .quickRetries(1))
        } throws: { error in
            let error = try #require(fastpullError(error))
            return error.code == .httpStatus && error.message.contains("Content-Range")
                && !error.message.contains("resume")
        }
        // Nothing was saved, so nothing is left: no output, no .part the size of the file, no journal.
        #expect(folder.contents == [])
    }

    @Test func missingFolderIsALocalError() async throws {
        await #expect {
            _ = try await fetch("/gen/10", name: "no/such/folder/out.bin")
        } throws: { error in
            let error = try #require(fastpullError(error))
            return error.code == .localIO && error.message.contains("does not exist")
        }
        #expect(server.stats.requests == 0)
    }

    @Test func unsupportedSchemeIsAUsageError() async throws {
        await #expect {
            _ = try await Fastpull.download(from: URL(string: "ftp://127.0.0.1/x")!, to: folder.url("x"))
        } throws: { error in
            fastpullError(error)?.code == .usage
        }
    }

    @Test func connectionRefusedIsANetworkError() async throws {
        // Port 1 (tcpmux) has no listener here; a stopped fixture server's port could be reused by
        // another test's server at once.
        await #expect {
            _ = try await Fastpull.download(
                from: URL(string: "http://127.0.0.1:1/gen/10")!, to: folder.url("x"),
                configuration: .quickRetries(1))
        } throws: { error in
            let error = try #require(fastpullError(error))
            return error.code == .network && error.message.contains("127.0.0.1")
        }
    }

    @Test func cancellingStopsPromptlyAndLeavesNoFile() async throws {
        // 1 MB/s per connection: this would take seconds; cancel once bytes flow.
        let download = Download(
            from: server.url("/gen/\(16 << 20)?rate=\(1_000_000 / FaultRun.timeScale)"),
            to: folder.url("slow.bin"),
            configuration: .quickRetries())
        let task = Task { try await download.run() }
        #expect(await download.whenWritten(atLeast: 1) { task.cancel() })
        let result = await task.result
        #expect(throws: FastpullError.self) { try result.get() }
        if case .failure(let error as FastpullError) = result { #expect(error.code == .interrupted) }
        #expect(!FileManager.default.fileExists(atPath: folder.url("slow.bin").path))
    }
}

@Suite("Download over IPv6")
struct IPv6DownloadTests {
    @Test func loopbackIPv6() async throws {
        var configuration = FixtureServer.Configuration()
        configuration.host = "::1"
        let server = try FixtureServer(configuration)
        let folder = TemporaryFolder()
        let size = 3 << 20
        let report = try await Fastpull.download(from: server.url("/gen/\(size)"), to: folder.url("v6.bin"))
        #expect(report.sha256 == Expected.sha256(size: size))
        #expect(server.baseURL.absoluteString.contains("[::1]"))
    }
}

@Suite("Download over HTTPS")
struct TLSDownloadTests {
    let folder = TemporaryFolder()
    var caFile: String { FixturePaths.certificatesDirectory + "/ca.pem" }

    func server(_ certificate: FixtureServer.Certificate = .localhost) throws -> FixtureServer {
        var configuration = FixtureServer.Configuration()
        configuration.tls = true
        configuration.certificate = certificate
        return try FixtureServer(configuration)
    }

    @Test func trustedTestAuthority() async throws {
        let server = try server()
        let size = 5 << 20
        let report = try await Fastpull.download(
            from: server.url("/gen/\(size)"), to: folder.url("tls.bin"),
            configuration: Configuration().with { $0.tls.caFile = caFile })
        #expect(report.sha256 == Expected.sha256(size: size))
        #expect(report.finalURL.scheme == "https")
    }

    /// Over TLS a connection claims a few milliseconds of bytes ahead of its reads (``ClaimLease``):
    /// answers cut by the server, and windows cut by steals from the slow connections, give back what
    /// they claimed and did not write. The file is the server's, and no byte is written twice.
    @Test func cutTLSAnswersLoseNothingAndWriteNothingTwice() async throws {
        let server = try server()
        let size = 8 << 20
        let report = try await Fastpull.download(
            from: server.url("/gen/\(size)?seed=9&drop-after=700000&drops=6&slow-every=3&slow-rate=400000"),
            to: folder.url("tls.bin"),
            configuration: Configuration(connections: .fixed(4)).with {
                $0.tls.caFile = caFile
                $0.retries.baseDelay = .milliseconds(5)
            })
        #expect(
            try Data(contentsOf: folder.url("tls.bin")) == Data(FixtureContent.bytes(count: size, seed: 9)))
        #expect(report.bytesFetched == Int64(size))
        #expect(report.retries > 0, "no answer was cut")
    }

    /// Paced answers over TLS come to their ends without waiting on the socket: a receive low-water
    /// mark sized from the plaintext still to come waited for bytes OpenSSL had already read ahead,
    /// until the idle timeout cut the connection (a retry, and seconds lost, every few windows).
    @Test func pacedTLSAnswersEndWithoutWaiting() async throws {
        let server = try server()
        let size = 24 << 20
        var configuration = Configuration(connections: .fixed(4))
        configuration.tls.caFile = caFile
        configuration.retries.baseDelay = .milliseconds(5)
        configuration.timeouts.idle = .seconds(3)
        let report = try await Fastpull.download(
            from: server.url("/gen/\(size)?seed=10&rate=12000000"), to: folder.url("tls.bin"),
            configuration: configuration)
        #expect(report.sha256 == Expected.sha256(size: size, seed: 10))
        #expect(report.retries == 0)
    }

    @Test func unknownAuthorityIsRejected() async throws {
        let server = try server()
        await #expect {
            _ = try await Fastpull.download(from: server.url("/gen/10"), to: folder.url("tls.bin"))
        } throws: { error in
            fastpullError(error)?.code == .tls
        }
        #expect(folder.contents.isEmpty)
    }

    @Test func hostnameMismatchIsRejected() async throws {
        let server = try server(.wrongHost)
        await #expect {
            _ = try await Fastpull.download(
                from: server.url("/gen/10"), to: folder.url("tls.bin"),
                configuration: Configuration().with { $0.tls.caFile = caFile })
        } throws: { error in
            let error = try #require(fastpullError(error))
            return error.code == .tls && error.remedy == .trustAnotherAuthority
        }
        #expect(folder.contents.isEmpty)
    }

    @Test func insecureSkipsVerification() async throws {
        let server = try server(.wrongHost)
        let report = try await Fastpull.download(
            from: server.url("/gen/1000"), to: folder.url("tls.bin"),
            configuration: Configuration().with { $0.tls.insecure = true })
        #expect(report.sha256 == Expected.sha256(size: 1000))
    }
}
