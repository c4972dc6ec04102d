import COpenSSL
import FastpullFixtures
import Foundation
import Glibc
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP
@testable import FastpullNet

/// Hostile file systems and hostile servers: symlinks planted where Fastpull creates files, the user's
/// umask, and TLS that must fail closed (untrusted chain, wrong host, expired, older than TLS 1.2).
///
/// Not here yet: `Authorization`, `Cookie` and `Proxy-Authorization` forwarding across redirects,
/// which needs a way to send request headers (the `-H` option) that does not exist yet.
@Suite("Security", .timeLimit(.minutes(10)))
struct SecurityTests {
    let server: FixtureServer
    let folder = TemporaryFolder()

    init() throws {
        server = try FixtureServer()
    }

    var output: URL { folder.url("out.bin") }
    var caFile: String { FixturePaths.certificatesDirectory + "/ca.pem" }

    func configuration(retries: Int = 1) -> Configuration {
        Configuration(connections: .fixed(2)).with {
            $0.retries.limit = retries
            $0.retries.baseDelay = .milliseconds(5)
        }
    }

    /// A file outside the download's reach that a planted symlink points to.
    func victim(_ name: String = "victim.txt") throws -> (path: String, contents: Data) {
        let path = folder.path + "/" + name
        let contents = Data("precious bytes that must survive\n".utf8)
        try contents.write(to: URL(fileURLWithPath: path))
        return (path, contents)
    }

    // MARK: - Symlinks

    /// A symlink planted at `<out>.part` is not followed (O_NOFOLLOW): the download fails with a local
    /// I/O error naming the path, and the file it points to is untouched.
    @Test func symlinkAtThePartPathIsNotFollowed() async throws {
        let victim = try victim()
        try FileManager.default.createSymbolicLink(
            atPath: output.path + ".part", withDestinationPath: victim.path)
        let result = await FaultRun.download(server.url("/gen/\(1 << 20)"), to: output, configuration())
        _ = try FaultRun.expectError(
            result, code: .localIO, mentioning: [output.path + ".part", "not a regular file"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: victim.path)) == victim.contents)
        #expect(!FileManager.default.fileExists(atPath: output.path))
    }

    /// A dangling symlink at `<out>.part` does not make Fastpull create the file it names.
    @Test func danglingSymlinkAtThePartPathCreatesNothing() async throws {
        let target = folder.path + "/created-through-the-link"
        try FileManager.default.createSymbolicLink(atPath: output.path + ".part", withDestinationPath: target)
        let result = await FaultRun.download(server.url("/gen/1000"), to: output, configuration())
        _ = try FaultRun.expectError(result, code: .localIO, mentioning: [output.path + ".part"])
        #expect(!FileManager.default.fileExists(atPath: target))
    }

    /// A symlink at the output path is replaced by the verified file (rename does not follow it); the
    /// file it pointed to is untouched.
    @Test func symlinkAtTheOutputPathIsReplacedNotFollowed() async throws {
        let victim = try victim()
        try FileManager.default.createSymbolicLink(atPath: output.path, withDestinationPath: victim.path)
        let size = 100_000
        // A download that may replace the file there (without, it is refused: another test).
        var replacing = configuration()
        replacing.resume.replacesExistingFile = true
        let report = try await FaultRun.download(server.url("/gen/\(size)"), to: output, replacing).get()
        #expect(report.sha256 == Expected.sha256(size: size))
        #expect(try Data(contentsOf: URL(fileURLWithPath: victim.path)) == victim.contents)
        var info = stat()
        #expect(lstat(output.path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG)
        #expect(try Data(contentsOf: output) == Data(FixtureContent.bytes(count: size, seed: 1)))
    }

    /// A symlink planted at the journal's path is neither read nor written through: the journal is
    /// treated as unusable, and the file it pointed to is untouched.
    @Test(arguments: [".part.fastpull", ".part.fastpull-live"])
    func symlinkAtTheJournalPathIsNotFollowed(suffix: String) async throws {
        let victim = try victim()
        try FileManager.default.createSymbolicLink(
            atPath: output.path + suffix, withDestinationPath: victim.path)
        let size = 100_000
        let report = try await FaultRun.download(server.url("/gen/\(size)"), to: output, configuration())
            .get()
        #expect(report.sha256 == Expected.sha256(size: size))
        #expect(try Data(contentsOf: URL(fileURLWithPath: victim.path)) == victim.contents)
    }

    /// A symlink planted at the journal's temporary file (written, then renamed over the journal) is
    /// not written through: the download fails with a local I/O error and the target is untouched.
    @Test func symlinkAtTheJournalTemporaryFileIsNotFollowed() async throws {
        let victim = try victim()
        let temporary = output.path + ".part.fastpull.tmp"
        try FileManager.default.createSymbolicLink(atPath: temporary, withDestinationPath: victim.path)
        // Over 1 MiB: journaled (``Pipeline/largestUnjournaledFile``).
        let result = await FaultRun.download(server.url("/gen/\(2 << 20)"), to: output, configuration())
        _ = try FaultRun.expectError(result, code: .localIO, mentioning: [temporary, "symbolic links"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: victim.path)) == victim.contents)
        #expect(!FileManager.default.fileExists(atPath: output.path))
    }

    /// A file of at most 1 MiB writes no journal at all (a stopped one is fetched again): the same
    /// symlink at the journal's temporary path is never touched, and the download succeeds. A failure
    /// leaves nothing behind.
    @Test func aSmallFileWritesNoJournal() async throws {
        let victim = try victim()
        let temporary = output.path + ".part.fastpull.tmp"
        try FileManager.default.createSymbolicLink(atPath: temporary, withDestinationPath: victim.path)
        let size = 1 << 20
        let report = try await FaultRun.download(server.url("/gen/\(size)"), to: output, configuration())
            .get()
        #expect(report.sha256 == Expected.sha256(size: size))
        #expect(try Data(contentsOf: URL(fileURLWithPath: victim.path)) == victim.contents)

        let failed = folder.url("small-failed.bin")
        let result = await FaultRun.download(
            server.url("/gen/\(size)?drop-after=100000&drops=100000"), to: failed, configuration(retries: 0))
        _ = try FaultRun.expectError(result, code: .network, mentioning: [])
        #expect(Leftovers(failed).isEmpty, "\(Leftovers(failed))")
    }

    // MARK: - Modes

    /// Files are created with mode 0666 filtered by the user's umask, like any other tool's: the output,
    /// and the `.part` and journal a failed download leaves.
    @Test(.serialized, arguments: [0o022, 0o027, 0o077] as [mode_t])
    func filesFollowTheUmask(mask: mode_t) async throws {
        let expected = 0o666 & ~mask
        // umask is per process; the modes are checked only on files this test creates.
        let previous = Umask.set(mask)
        defer { Umask.set(previous) }

        let report = try await FaultRun.download(server.url("/gen/1000"), to: output, configuration()).get()
        #expect(report.size == 1000)
        #expect(Self.mode(output.path) == expected)

        // A failure that saved some bytes leaves them resumable: the .part and its journal (a file over
        // 1 MiB, which is journaled).
        let failed = folder.url("failed.bin")
        let result = await FaultRun.download(
            server.url("/gen/\(2 << 20)?drop-after=100000&drops=100000"), to: failed,
            configuration(retries: 0))
        _ = try FaultRun.expectError(result, code: .network, mentioning: [])
        #expect(Self.mode(failed.path + ".part") == expected)
        #expect(Self.mode(failed.path + ".part.fastpull") == expected)
    }

    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    // MARK: - TLS

    func tlsServer(_ certificate: FixtureServer.Certificate) throws -> FixtureServer {
        var configuration = FixtureServer.Configuration()
        configuration.tls = true
        configuration.certificate = certificate
        return try FixtureServer(configuration)
    }

    /// A chain Fastpull does not trust (the test CA is not in the system store) → exit 8 → nothing left.
    @Test func untrustedChainFails() async throws {
        let tls = try tlsServer(.localhost)
        let url = tls.url("/gen/1000")
        let result = await FaultRun.download(url, to: output, configuration())
        _ = try FaultRun.expectError(result, code: .tls, mentioning: [url.absoluteString, "certificate"])
        #expect(Leftovers(output).isEmpty)
    }

    /// A certificate for another host → exit 8 naming the mismatch → nothing left.
    @Test func wrongHostnameFails() async throws {
        let tls = try tlsServer(.wrongHost)
        let url = tls.url("/gen/1000")
        var configuration = configuration()
        configuration.tls.caFile = caFile
        let result = await FaultRun.download(url, to: output, configuration)
        _ = try FaultRun.expectError(result, code: .tls, mentioning: [url.absoluteString, "mismatch"])
        #expect(Leftovers(output).isEmpty)
    }

    /// An expired certificate → exit 8 naming the expiry → nothing left.
    @Test func expiredCertificateFails() async throws {
        let tls = try tlsServer(.expired)
        let url = tls.url("/gen/1000")
        var configuration = configuration()
        configuration.tls.caFile = caFile
        let result = await FaultRun.download(url, to: output, configuration)
        _ = try FaultRun.expectError(result, code: .tls, mentioning: [url.absoluteString, "expired"])
        #expect(Leftovers(output).isEmpty)
    }

    /// TLS 1.2 is the minimum: a server that speaks only TLS 1.1 fails the handshake (exit 8), while the
    /// same server, certificate and trust speaking TLS 1.2 works.
    @Test func tls11IsRefusedWhileTLS12Works() async throws {
        let legacy = try await LegacyTLSServer.start(["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"])
        defer { legacy.stop() }
        var configuration = configuration(retries: 0)
        configuration.tls.caFile = caFile
        configuration.timeouts.idle = .seconds(5)
        let url = try #require(URL(string: "https://127.0.0.1:\(legacy.port)/x"))
        let result = await FaultRun.download(url, to: output, configuration)
        _ = try FaultRun.expectError(result, code: .tls, mentioning: [url.absoluteString, "protocol"])
        #expect(Leftovers(output).isEmpty)

        let modern = try await LegacyTLSServer.start(["-tls1_2"])
        defer { modern.stop() }
        let context = try TLSContext(options: TLSOptions(caFile: caFile))
        let port = modern.port
        let handshake = await Self.onThread {
            Result {
                try Connector.connect(
                    host: "127.0.0.1", port: port, tls: context,
                    timeouts: Timeouts(connect: .seconds(10), idle: .seconds(10))
                ).close()
            }
        }
        #expect(throws: Never.self) { try handshake.get() }
    }

    /// Runs blocking `body` on a thread of its own, never on the cooperative pool.
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }

    /// A handshake that fails for a reason other than the certificate (here the protocol version) must
    /// not advise `--cacert` or `--insecure`, which cannot help and weaken security.
    @Test
    func handshakeFailureDoesNotAdviseTrustOptions() async throws {
        let legacy = try await LegacyTLSServer.start(["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"])
        defer { legacy.stop() }
        var configuration = configuration(retries: 0)
        configuration.tls.caFile = caFile
        configuration.timeouts.idle = .seconds(5)
        let url = try #require(URL(string: "https://127.0.0.1:\(legacy.port)/x"))
        let result = await FaultRun.download(url, to: output, configuration)
        let error = try FaultRun.expectError(
            result, code: .tls, mentioning: [url.absoluteString, "protocol"])
        #expect(error.remedy == nil && !"\(error)".contains("insecure"), "\(error)")
    }

    /// The context itself sets TLS 1.2 as the minimum protocol version.
    @Test func contextMinimumIsTLS12() throws {
        let context = try TLSContext(options: TLSOptions())
        let minimum = SSL_CTX_ctrl(context.context, SSL_CTRL_GET_MIN_PROTO_VERSION, 0, nil)
        #expect(minimum == TLS1_2_VERSION)
    }
}

/// Sets the process's file mode creation mask.
enum Umask {
    @discardableResult
    static func set(_ mask: mode_t) -> mode_t { umask(mask) }
}

/// `openssl s_server -www` with the fixture server's certificate on a free loopback port, with extra
/// arguments (protocol versions, ciphers).
final class LegacyTLSServer {
    let port: Int
    private let process: Process

    private init(process: Process, port: Int) {
        self.process = process
        self.port = port
    }

    static func start(_ arguments: [String]) async throws -> LegacyTLSServer {
        let certificates = FixturePaths.certificatesDirectory
        let output = Pipe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // stdbuf: s_server prints its "ACCEPT host:port" line through stdio, block-buffered on a pipe.
        process.arguments =
            [
                "stdbuf", "-oL", "openssl", "s_server", "-accept", "127.0.0.1:0", "-cert",
                "\(certificates)/server.pem", "-key", "\(certificates)/server.key", "-www",
            ] + arguments
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let reader = output.fileHandleForReading
        // Reads lines until "ACCEPT 127.0.0.1:PORT" (nil if the process ends first), then keeps
        // draining the pipe so that s_server never blocks on it.
        let port: Int? = await withCheckedContinuation { continuation in
            Thread {
                var pending = ""
                var found: Int?
                while found == nil {
                    let data = reader.availableData
                    if data.isEmpty { break }
                    pending += String(decoding: data, as: UTF8.self)
                    for line in pending.split(separator: "\n") where line.hasPrefix("ACCEPT ") {
                        found = line.split(separator: ":").last.flatMap { Int($0) }
                    }
                }
                continuation.resume(returning: found)
                while !reader.availableData.isEmpty {}
            }.start()
        }
        let server = LegacyTLSServer(process: process, port: port ?? 0)
        guard port != nil else {
            server.stop()
            throw DidNotStart()
        }
        return server
    }

    struct DidNotStart: Error {}

    /// Kills the server (SIGKILL: a child started from a dispatch thread may have SIGTERM blocked).
    /// Foundation reaps it; waiting here would block a thread of the cooperative pool.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
