import CLinux
import FastpullFixtures
import Foundation
import Glibc
import Testing

@testable import Fastpull
@testable import FastpullEngine

/// Reruns: a file a run saved carries where it came from and which version it is (extended
/// attributes), so the same command again keeps it while the server still offers that version, and
/// a list rerun fetches only what is missing or changed. Before: the rerun exited 7 "already exists",
/// and a 10-file list rerun after deleting 3 said "10 files: 0 saved, 10 failed".
@Suite("Reruns keep what is complete")
struct RerunCLITests {
    let server: FixtureServer
    let folder: String
    /// Served by the fixture server under `/files/`.
    let served: String

    init() throws {
        let workspace = try ServedWorkspace(label: "fastpull-rerun")
        server = workspace.server
        folder = workspace.folder
        served = workspace.served
    }

    func contents(_ name: String) -> Data? { FileManager.default.contents(atPath: folder + "/" + name) }

    /// The extended attribute `name` of `path`, if it has one.
    static func attribute(_ path: String, _ name: String) -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = getxattr(path, name, &buffer, buffer.count)
        return count >= 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    /// The field `name` (`size`, `sha256`, …) of the origin record on `path` (its `user.fastpull.origin`
    /// attribute, one `name: value` line a field), if it has one.
    static func recorded(_ path: String, _ name: String) -> String? {
        attribute(path, "user.fastpull.origin")?.split(separator: "\n")
            .first { $0.hasPrefix(name + ": ") }
            .map { String($0.dropFirst(name.count + 2)) }
    }

    @Test func aFinishedFileRecordsItsOriginAndARerunKeepsIt() async throws {
        let size = 3 << 20
        let url = server.url("/gen/\(size)?seed=5").absoluteString
        let first = try await CLIRunner.run([url, "-o", "a.bin", "--json", "--sha256"], in: folder)
        #expect(first.status == 0, "\(first.stderr)")
        let path = folder + "/a.bin"
        #expect(Self.attribute(path, "user.xdg.origin.url") == url)
        let sha256 = try BatchCLITests.sha256(FixtureContent.bytes(count: size, seed: 5))
        #expect(Self.recorded(path, "sha256") == sha256)
        #expect(Self.recorded(path, "size") == "\(size)")

        server.resetStats()
        let again = try await CLIRunner.run([url, "-o", "a.bin"], in: folder)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(
            again.stderr.contains("is already complete (3.0 MiB) and unchanged on the server"),
            "\(again.stderr)")
        // One probe, no body.
        #expect(server.stats.requests == 1)
        #expect(server.stats.bodyBytesSent == 0)
        #expect(contents("a.bin") == Data(FixtureContent.bytes(count: size, seed: 5)))

        // -c says the same.
        let continued = try await CLIRunner.run(["-c", url, "-o", "a.bin"], in: folder)
        #expect(continued.status == 0, "\(continued.stderr)")
        #expect(continued.stderr.contains("unchanged on the server"), "\(continued.stderr)")
    }

    /// A file saved without its SHA-256 (the default) and asked for it on the rerun: the digest is read
    /// from the file in place, nothing is fetched again, and the record of a file saved without one has
    /// no `.sha256` attribute at all.
    @Test func aRerunAskedForTheSHA256ReadsItFromTheFile() async throws {
        let size = 2 << 20
        let url = server.url("/gen/\(size)?seed=9").absoluteString
        let first = try await CLIRunner.run([url, "-o", "b.bin"], in: folder)
        #expect(first.status == 0, "\(first.stderr)")
        let path = folder + "/b.bin"
        #expect(Self.recorded(path, "size") == "\(size)")
        #expect(Self.recorded(path, "sha256") == nil)
        #expect(!first.stderr.contains("sha256"), "\(first.stderr)")

        server.resetStats()
        let again = try await CLIRunner.run([url, "-o", "b.bin", "--sha256", "--json"], in: folder)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(server.stats.bodyBytesSent == 0)
        let sha256 = try BatchCLITests.sha256(FixtureContent.bytes(count: size, seed: 9))
        #expect(again.stdout.contains("\"digests\":{\"sha256\":\"\(sha256)\"}"), "\(again.stdout)")
        #expect(again.stdout.contains("\"alreadyPresent\":true"), "\(again.stdout)")
    }

    /// A digest printed is a digest computed. A saved file whose bytes changed while its size and
    /// modification time did not: `--sha256` hashes it as it is now, and a digest other than the one
    /// recorded is an integrity error (exit 6) that says so and fetches nothing; `--force` fetches it
    /// again. Without `--sha256` the recorded digest is reported as recorded (`recordedDigests`),
    /// never as the file's. Before, the rerun printed the recorded digest as the file's, exit 0.
    @Test func aRerunReportsOnlyTheDigestItComputed() async throws {
        let size = 1 << 20
        let url = server.url("/gen/\(size)?seed=11").absoluteString
        let original = FixtureContent.bytes(count: size, seed: 11)
        let recorded = Digest.hex(Digest.compute(.sha256, of: original))
        let first = try await CLIRunner.run([url, "-o", "d.bin", "--sha256"], in: folder)
        #expect(first.status == 0, "\(first.stderr)")
        let path = folder + "/d.bin"
        #expect(Self.recorded(path, "sha256") == recorded)

        // Unchanged: the digest is computed from the file, and the recorded one labelled as such.
        let kept = try await CLIRunner.run([url, "-o", "d.bin", "--sha256", "--json"], in: folder)
        #expect(kept.status == 0, "\(kept.stderr)")
        #expect(kept.stdout.contains("\"digests\":{\"sha256\":\"\(recorded)\"}"), "\(kept.stdout)")
        #expect(kept.stdout.contains("\"recordedDigests\":{\"sha256\":\"\(recorded)\"}"), "\(kept.stdout)")
        #expect(kept.stderr.contains("sha256 \(recorded) (read from the file now)"), "\(kept.stderr)")

        // Other bytes, the same size, and the modification time put back as it was.
        var info = stat()
        #expect(stat(path, &info) == 0)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seek(toOffset: 1000)
        try handle.write(contentsOf: Data("changed".utf8))
        try handle.close()
        var times = [info.st_atim, info.st_mtim]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        let altered = try #require(contents("d.bin"))
        let now = Digest.hex(Digest.compute(.sha256, of: Array(altered)))

        server.resetStats()
        let hashed = try await CLIRunner.run([url, "-o", "d.bin", "--sha256", "--json"], in: folder)
        #expect(hashed.status == 6, "\(hashed.stderr)")
        #expect(
            hashed.stderr.contains(
                "error: \(path) changed since it was saved: its SHA-256 is now \(now), not the \(recorded) "
                    + "recorded then; nothing downloaded; use --force to replace it"), "\(hashed.stderr)")
        #expect(!hashed.stdout.contains("\"digests\":{\"sha256\":\"\(recorded)\"}"), "\(hashed.stdout)")
        #expect(hashed.stdout.contains("\"event\":\"failed\""), "\(hashed.stdout)")
        #expect(server.stats.bodyBytesSent == 0)
        #expect(contents("d.bin") == altered)

        // Not asked to hash it: nothing claims a digest of the file; the record's is labelled so.
        let unhashed = try await CLIRunner.run([url, "-o", "d.bin", "--json"], in: folder)
        #expect(unhashed.status == 0, "\(unhashed.stderr)")
        #expect(unhashed.stdout.contains("\"digests\":{}"), "\(unhashed.stdout)")
        #expect(
            unhashed.stdout.contains("\"recordedDigests\":{\"sha256\":\"\(recorded)\"}"), "\(unhashed.stdout)"
        )

        // --force fetches it again, whatever the record says.
        server.resetStats()
        let forced = try await CLIRunner.run([url, "-o", "d.bin", "--sha256", "--force"], in: folder)
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(server.stats.bodyBytesSent == Int64(size))
        #expect(contents("d.bin") == Data(original))
        #expect(Self.recorded(path, "sha256") == recorded)
    }

    @Test func aListRerunFetchesOnlyWhatIsMissing() async throws {
        let sizes = (0..<10).map { 10_000 + $0 * 1000 }
        let list = sizes.enumerated().map { index, size in
            server.url("/gen/\(size)?seed=\(index + 1)").absoluteString + " f\(index).bin"
        }.joined(separator: "\n")
        let first = try await CLIRunner.run(["-i", "-"], in: folder, input: Data(list.utf8))
        #expect(first.status == 0, "\(first.stderr)")

        // Nothing missing: the rerun fetches nothing at all (the probes are HEADs).
        server.resetStats()
        let whole = try await CLIRunner.run(["-i", "-"], in: folder, input: Data(list.utf8))
        #expect(whole.status == 0, "\(whole.stderr)")
        #expect(whole.stderr.contains("10 files: 0 saved, 10 already here"), "\(whole.stderr)")
        #expect(server.stats.bodyBytesSent == 0)

        for index in [2, 5, 7] { try FileManager.default.removeItem(atPath: folder + "/f\(index).bin") }
        server.resetStats()
        let again = try await CLIRunner.run(["-i", "-"], in: folder, input: Data(list.utf8))
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("10 files: 3 saved, 7 already here"), "\(again.stderr)")
        #expect(server.stats.bodyBytesSent == Int64(sizes[2] + sizes[5] + sizes[7]))
        for (index, size) in sizes.enumerated() {
            #expect(
                contents("f\(index).bin") == Data(FixtureContent.bytes(count: size, seed: UInt64(index + 1))))
        }
    }

    /// The server offers another version: the file (as it was saved) is fetched again in its place.
    @Test func aFileChangedOnTheServerIsFetchedAgain() async throws {
        let source = served + "/v.bin"
        try Data(repeating: 1, count: 50_000).write(to: URL(fileURLWithPath: source))
        let url = server.url("/files/v.bin").absoluteString
        let first = try await CLIRunner.run([url, "-o", "v.bin"], in: folder)
        #expect(first.status == 0, "\(first.stderr)")

        // A new version: other bytes, and a modification time a minute later (another Last-Modified
        // and ETag).
        try Data(repeating: 2, count: 60_000).write(to: URL(fileURLWithPath: source))
        let later = Date().addingTimeInterval(60)
        try FileManager.default.setAttributes([.modificationDate: later], ofItemAtPath: source)
        let again = try await CLIRunner.run([url, "-o", "v.bin"], in: folder)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("changed on the server since"), "\(again.stderr)")
        #expect(contents("v.bin") == Data(repeating: 2, count: 60_000))
    }

    /// A checksum given on the rerun decides alone: a recorded file that does not match it is never
    /// reported complete (it was, exit 0, with the wrong bytes).
    @Test func aChecksumOnTheRerunOutranksTheRecord() async throws {
        let url = server.url("/gen/50000").absoluteString
        let first = try await CLIRunner.run([url, "-o", "k.bin"], in: folder)
        #expect(first.status == 0, "\(first.stderr)")
        let wrong = String(repeating: "ab", count: 32)
        let again = try await CLIRunner.run(
            [url, "-o", "k.bin", "--checksum", "sha256=\(wrong)"], in: folder)
        #expect(again.status == 7, "\(again.stderr)")
        #expect(again.stderr.contains("does not match its checksum"), "\(again.stderr)")
        #expect(!again.stderr.contains("already complete"), "\(again.stderr)")
    }

    /// A file changed here since it was saved is the user's: the rerun refuses it as before.
    /// The case a user met: one byte of a saved file flipped and its modification time put back. A
    /// plain rerun trusts the record and says on what ("its size and time as recorded"); `--verify`
    /// re-hashes and fails, exit 6, fetching nothing; `--force` always fetches, and the bytes are
    /// right again.
    @Test func forceForcesAndVerifyRehashes() async throws {
        let size = 1 << 20
        let url = server.url("/gen/\(size)?seed=12").absoluteString
        let original = Data(FixtureContent.bytes(count: size, seed: 12))
        // Saved without a digest, it cannot be verified: --verify says so and keeps nothing as complete.
        #expect(try await CLIRunner.run([url, "-o", "plain.bin"], in: folder).status == 0)
        let unverifiable = try await CLIRunner.run([url, "-o", "plain.bin", "--verify"], in: folder)
        #expect(unverifiable.status == 6, "\(unverifiable.stderr)")
        #expect(unverifiable.stderr.contains("has no SHA-256 recorded"), "\(unverifiable.stderr)")
        #expect(try await CLIRunner.run([url, "-o", "f.bin", "--sha256"], in: folder).status == 0)
        let path = folder + "/f.bin"
        var info = stat()
        #expect(stat(path, &info) == 0)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seek(toOffset: 4096)
        try handle.write(contentsOf: Data([original[4096] ^ 0xFF]))
        try handle.close()
        var times = [info.st_atim, info.st_mtim]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        let flipped = contents("f.bin")

        let trusted = try await CLIRunner.run([url, "-o", "f.bin"], in: folder)
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(trusted.stderr.contains("already complete"), "\(trusted.stderr)")
        #expect(
            trusted.stderr.contains("its size and time as recorded; --verify re-hashes it"),
            "\(trusted.stderr)")
        server.resetStats()
        let verified = try await CLIRunner.run([url, "-o", "f.bin", "--verify"], in: folder)
        #expect(verified.status == 6, "\(verified.stderr)")
        #expect(verified.stderr.contains("changed since it was saved"), "\(verified.stderr)")
        #expect(server.stats.bodyBytesSent == 0)
        #expect(contents("f.bin") == flipped)
        let forced = try await CLIRunner.run([url, "-o", "f.bin", "--force"], in: folder)
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(contents("f.bin") == original)
        #expect(server.stats.bodyBytesSent == Int64(size))
    }

    /// `-R` gives the file the server's `Last-Modified` (the fixture's generated files: 2020-01-01),
    /// before the record is written, so a rerun still finds it as saved; without it, the time it was
    /// saved.
    @Test func remoteTimeIsTheServers() async throws {
        let url = server.url("/gen/4096?seed=13").absoluteString
        let kept = try await CLIRunner.run([url, "-o", "r.bin", "-R"], in: folder)
        #expect(kept.status == 0, "\(kept.stderr)")
        var info = stat()
        #expect(stat(folder + "/r.bin", &info) == 0)
        #expect(info.st_mtim.tv_sec == 1_577_836_800)
        let again = try await CLIRunner.run([url, "-o", "r.bin", "--remote-time"], in: folder)
        #expect(again.stderr.contains("already complete"), "\(again.stderr)")
        #expect(try await CLIRunner.run([url, "-o", "now.bin"], in: folder).status == 0)
        #expect(stat(folder + "/now.bin", &info) == 0)
        #expect(info.st_mtim.tv_sec > 1_700_000_000)
    }

    /// `--update`: an existing file that matches its checksum is kept without a request; one that
    /// does not is fetched again and replaced.
    @Test func updateKeepsWhatVerifiesAndReplacesWhatDoesNot() async throws {
        let size = 65536
        let url = server.url("/gen/\(size)?seed=16").absoluteString
        let original = Data(FixtureContent.bytes(count: size, seed: 16))
        let checksum = "sha256=" + Digest.hex(Digest.compute(.sha256, of: Array(original)))
        try original.write(to: URL(fileURLWithPath: folder + "/u.bin"))
        server.resetStats()
        let kept = try await CLIRunner.run(
            [url, "-o", "u.bin", "--checksum", checksum, "--update"], in: folder)
        #expect(kept.status == 0, "\(kept.stderr)")
        #expect(server.stats.requests == 0)
        try Data(repeating: 0, count: size).write(to: URL(fileURLWithPath: folder + "/u.bin"))
        let replaced = try await CLIRunner.run(
            [url, "-o", "u.bin", "--checksum", checksum, "--update"], in: folder)
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(contents("u.bin") == original)
        try Data(repeating: 0, count: size).write(to: URL(fileURLWithPath: folder + "/u.bin"))
        let refused = try await CLIRunner.run([url, "-o", "u.bin", "--checksum", checksum], in: folder)
        #expect(refused.status == 7, "without --update or --force: \(refused.stderr)")
    }

    @Test func aFileChangedHereIsNeverReplaced() async throws {
        let url = server.url("/gen/20000").absoluteString
        let first = try await CLIRunner.run([url, "-o", "h.bin"], in: folder)
        #expect(first.status == 0, "\(first.stderr)")
        let path = folder + "/h.bin"
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seek(toOffset: 0)
        try handle.write(contentsOf: Data("mine".utf8))
        try handle.close()
        let edited = contents("h.bin")

        let again = try await CLIRunner.run([url, "-o", "h.bin"], in: folder)
        #expect(again.status == 7, "\(again.stderr)")
        #expect(again.stderr.contains("already exists"), "\(again.stderr)")
        #expect(contents("h.bin") == edited)
    }
}
