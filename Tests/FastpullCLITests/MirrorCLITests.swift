import FastpullFixtures
import Foundation
import Synchronization
import Testing

@testable import Fastpull
@testable import FastpullEngine

/// `--mirror`, `--mirrors-unverified`, several URLs on an input-file line, and `--metalink`, through
/// the built binary against fixture servers serving the same content.
@Suite("fastpull sources: mirrors and Metalink")
struct MirrorCLITests {
    let workspace: ServedWorkspace
    let mirror: FixtureServer
    var folder: String { workspace.folder }
    var server: FixtureServer { workspace.server }

    static let size = 6 << 20
    static let content = FixtureContent.bytes(count: size, seed: 4)
    static let pieceLength = 1 << 20

    init() throws {
        workspace = try ServedWorkspace(label: "fastpull-mirrors")
        mirror = try FixtureServer()
    }

    func run(_ arguments: [String]) async throws -> CLIRunner.Result {
        try await CLIRunner.run(arguments, in: folder)
    }

    func url(_ server: FixtureServer, _ query: String = "") -> String {
        server.url("/gen/\(Self.size)?seed=4&rate=3000000\(query)").absoluteString
    }

    func saved(_ name: String) -> Data? { FileManager.default.contents(atPath: folder + "/" + name) }

    /// The file's SHA-256 and the SHA-1 of each piece, worked out once, in this process: a coreutils
    /// process waited for on the test pool (Foundation's `waitUntilExit` spins) starved the pool, with
    /// the other tests of the suite blocked on this initializer, until nothing ran.
    static let digest = Digest.hex(Digest.compute(.sha256, of: content))
    static let pieceDigests: [String] = stride(from: 0, to: size, by: pieceLength).map {
        Digest.hex(Digest.compute(.sha1, of: Array(content[$0..<min($0 + pieceLength, size)])))
    }

    static func sha256(_ bytes: ArraySlice<UInt8>) throws -> String {
        try #require(bytes.count == content.count && !digest.isEmpty)
        return digest
    }

    @Test func aMirrorWithAChecksumServesPartOfTheFile() async throws {
        let digest = try Self.sha256(Self.content[...])
        let result = try await run([
            url(server), "--mirror", url(mirror), "--checksum", "sha256=\(digest)", "-n", "4", "-o", "m.bin",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(saved("m.bin") == Data(Self.content))
        #expect(result.stderr.contains("; from 2 sources: 127.0.0.1:\(server.port) "), "\(result.stderr)")
        #expect(server.stats.bodyBytesSent > 0 && mirror.stats.bodyBytesSent > 0)
    }

    @Test func withoutAChecksumTheMirrorIsLeftAloneAndTheUserTold() async throws {
        let result = try await run([url(server), "--mirror", url(mirror), "-o", "u.bin"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(saved("u.bin") == Data(Self.content))
        #expect(
            result.stderr.contains("warning: nothing can verify a file made of several sources"),
            "\(result.stderr)")
        #expect(mirror.stats.requests == 0)
        let mixed = try await run([
            url(server), "--mirror", url(mirror), "-o", "v.bin", "--mirrors-unverified",
        ])
        #expect(mixed.status == 0, "\(mixed.stderr)")
        #expect(mirror.stats.bodyBytesSent > 0)
    }

    @Test(arguments: [
        (
            ["http://a.test/x", "http://b.test/y", "--mirror", "http://c.test/x"],
            "--mirror: gives sources of one file"
        ),
        (["http://a.test/x", "--mirror", "ftp://c.test/x"], "--mirror: unsupported scheme 'ftp'"),
        (["--metalink", "/nonexistent/x.meta4"], "--metalink: cannot read '/nonexistent/x.meta4'"),
    ])
    func badSourcesAreUsageErrors(_ arguments: [String], _ message: String) async throws {
        let result = try await run(arguments)
        #expect(result.status == 2)
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    @Test func anInputLineWithSeveralURLsFetchesFromEach() async throws {
        let digest = try Self.sha256(Self.content[...])
        let list = folder + "/list.txt"
        try "\(url(server))\t\(url(mirror))\tlisted.bin\tsha256=\(digest)\n".write(
            toFile: list, atomically: true, encoding: .utf8)
        let result = try await run(["-i", list, "-n", "4"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(saved("listed.bin") == Data(Self.content))
        #expect(server.stats.bodyBytesSent > 0 && mirror.stats.bodyBytesSent > 0)
    }

    /// A Metalink file's sources, one of them corrupt: the file verifies from its piece hashes, the
    /// corrupt source is named, only its bad piece is fetched again, and the file gets the Metalink's
    /// name (in its folder).
    @Test func aMetalinkDownloadSurvivesACorruptSource() async throws {
        let pieces = Self.pieceDigests.map { "<hash>\($0)</hash>" }
        let corrupt = url(server, "&corrupt=1000").replacingOccurrences(of: "&", with: "&amp;")
        let good = url(mirror).replacingOccurrences(of: "&", with: "&amp;")
        let document = """
            <?xml version="1.0" encoding="UTF-8"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <file name="weights/model.bin">
                <size>\(Self.size)</size>
                <hash type="sha-256">\(try Self.sha256(Self.content[...]))</hash>
                <pieces length="\(Self.pieceLength)" type="sha-1">\(pieces.joined())</pieces>
                <url priority="1">\(corrupt)</url>
                <url priority="2">\(good)</url>
              </file>
            </metalink>
            """
        try document.write(toFile: workspace.served + "/model.meta4", atomically: true, encoding: .utf8)
        let metalinkURL = server.url("/files/model.meta4").absoluteString
        let result = try await run(["--metalink", metalinkURL, "-n", "4"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(saved("weights/model.bin") == Data(Self.content))
        let corruptURL = url(server, "&corrupt=1000")
        #expect(
            result.stderr.contains("warning: no longer using \(corruptURL): it sent bytes 0-"),
            "\(result.stderr)")
        #expect(
            result.stderr.contains("do not match their piece hash; fetching them again"), "\(result.stderr)")
        #expect(result.stderr.contains("sha256 from Metalink file \(metalinkURL)"), "\(result.stderr)")
        let sent = server.stats.bodyBytesSent + mirror.stats.bodyBytesSent - Int64(document.utf8.count)
        #expect(sent <= Int64(Self.size + 2 * Self.pieceLength + (4 << 18)), "sent \(sent)")
    }

    /// A URL that is a Metalink document — served with its media type, or named `.meta4` — downloads
    /// the file it describes (from its sources, by its hashes); `--no-follow-metalink` saves the
    /// document itself.
    @Test func aURLThatIsAMetalinkDocumentIsFollowed() async throws {
        let digest = try Self.sha256(Self.content[...])
        let document = """
            <?xml version="1.0" encoding="UTF-8"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <file name="described.bin">
                <size>\(Self.size)</size>
                <hash type="sha-256">\(digest)</hash>
                <url priority="1">\(url(server).replacingOccurrences(of: "&", with: "&amp;"))</url>
                <url priority="2">\(url(mirror).replacingOccurrences(of: "&", with: "&amp;"))</url>
              </file>
            </metalink>
            """
        try document.write(toFile: workspace.served + "/doc", atomically: true, encoding: .utf8)
        try document.write(toFile: workspace.served + "/x.meta4", atomically: true, encoding: .utf8)
        let typed = server.url("/files/doc?content-type=application%2Fmetalink4%2Bxml").absoluteString
        let result = try await run([typed, "-n", "4"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(saved("described.bin") == Data(Self.content))
        #expect(result.stderr.contains("is a Metalink document: downloading the file it describes"))
        #expect(result.stderr.contains("sha256 from Metalink file \(typed)"), "\(result.stderr)")
        #expect(mirror.stats.bodyBytesSent > 0)
        #expect(saved("doc") == nil)

        try FileManager.default.removeItem(atPath: folder + "/described.bin")
        let named = try await run([server.url("/files/x.meta4").absoluteString])
        #expect(named.status == 0, "\(named.stderr)")
        #expect(saved("described.bin") == Data(Self.content))

        let kept = try await run([server.url("/files/x.meta4").absoluteString, "--no-follow-metalink"])
        #expect(kept.status == 0, "\(kept.stderr)")
        #expect(saved("x.meta4") == Data(document.utf8))
    }

    /// A Metalink name with an escape sequence and a right-to-left override, followed from a URL and
    /// read with `--metalink`: saved under the name the `Content-Disposition` sanitizer makes of it,
    /// and nothing raw reaches the terminal. Before, the file was `evil\e[31m\u{202E}gpj.exe` and
    /// "saving to" printed the escape.
    @Test func aMetalinkNameIsMadeSafeAsAServersNameIs() async throws {
        let source = server.url("/gen/3000?seed=2").absoluteString
        let document = """
            <?xml version="1.0" encoding="UTF-8"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <file name="evil&#x1B;[31m&#x202E;gpj.exe"><url>\(source.replacingOccurrences(of: "&", with: "&amp;"))</url></file>
            </metalink>
            """
        try document.write(toFile: workspace.served + "/evil.meta4", atomically: true, encoding: .utf8)
        try document.write(toFile: folder + "/local.meta4", atomically: true, encoding: .utf8)
        let expected = Data(FixtureContent.bytes(count: 3000, seed: 2))
        for arguments in [[server.url("/files/evil.meta4").absoluteString], ["--metalink", "local.meta4"]] {
            let result = try await run(arguments)
            #expect(result.status == 0, "\(arguments) \(result.stderr)")
            #expect(saved("evil[31mgpj.exe") == expected, "\(arguments)")
            #expect(result.stderr.contains("evil[31mgpj.exe"), "\(result.stderr)")
            #expect(!result.stderr.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{202E}" })
            let listing = try FileManager.default.contentsOfDirectory(atPath: folder)
            #expect(!listing.contains { $0.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{202E}" } })
            try FileManager.default.removeItem(atPath: folder + "/evil[31mgpj.exe")
        }
    }

    @Test func aDocumentThatIsNotMetalinkIsAUsageError() async throws {
        try "<html>not here</html>".write(toFile: folder + "/bad.meta4", atomically: true, encoding: .utf8)
        let result = try await run(["--metalink", "bad.meta4"])
        #expect(result.status == 2)
        #expect(
            result.stderr.contains("--metalink: bad.meta4: it has no <metalink> element"), "\(result.stderr)")
    }

    /// A server that names 300 mirrors, all on its own host and port: at most
    /// `Configuration.Limits.linkedMirrors` of them are asked for anything, and their probes (two at
    /// a time, as `-n 2` allows) stay within the per-host limit with the connections that fetch
    /// (before: 300 probes, and 83–222 connections open at once whatever the limits said).
    @Test func threeHundredLinkedMirrorsOnOneHostStayWithinTheLimits() async throws {
        let requests = Mutex<[String]>([])
        var configuration = FixtureServer.Configuration()
        configuration.requestLog = { line in requests.withLock { $0.append(line) } }
        let origin = try FixtureServer(configuration)
        let links = (0..<300).map { "</gen/\(Self.size)?seed=4&m=\($0)>; rel=duplicate" }
        let field = try #require(
            links.joined(separator: ", ").addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        let result = try await run([
            origin.url("/gen/\(Self.size)?seed=4&link=\(field)").absoluteString, "-o", "linked.bin",
            "--checksum", "sha256=\(try Self.sha256(Self.content[...]))", "-n", "2",
            "--max-connections-per-host", "4",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let whole = saved("linked.bin") == Data(Self.content)
        #expect(whole)
        #expect(result.stderr.contains("names 300 mirrors; using the first 8"), "\(result.stderr)")
        let mirrors = Set(
            requests.withLock { $0 }.compactMap { line -> Substring? in
                guard let range = line.range(of: "&m=") else { return nil }
                return line[range.upperBound...].prefix { $0.isNumber }
            })
        #expect(mirrors.count <= Configuration.Limits.linkedMirrors, "\(mirrors.sorted())")
        #expect(origin.peakOpenConnections <= 4, "\(origin.peakOpenConnections) open at once")
    }
}
