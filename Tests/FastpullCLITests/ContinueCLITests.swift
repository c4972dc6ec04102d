import FastpullFixtures
import Foundation
import Testing

/// `-c` continues another program's partial file once the server proves it is the beginning of the
/// file (its last 64 KiB, fetched again, are the same); otherwise it fails and leaves it as it is.
@Suite("fastpull -c on another program's partial file")
struct ContinueCLITests {
    let size = 2 << 20
    let prefix = 300_000
    let overlap = 64 << 10

    /// Runs `curl -r 0-(count-1) -o name url` in `folder`: the prefix another tool leaves.
    func curlPrefix(_ url: String, count: Int, to name: String, in folder: String) async throws {
        let result = try await CLIRunner.shell(
            "curl -s -r 0-\(count - 1) -o '\(name)' '\(url)'", in: folder)
        #expect(result.status == 0, "curl: \(result.stderr)")
        let written = try FileManager.default.attributesOfItem(atPath: folder + "/" + name)[.size] as? Int
        #expect(written == count)
    }

    @Test func aPrefixCurlLeftIsContinuedAndTheServerSendsOnlyTheRestAndTheOverlap() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-continue")
        let url = workspace.server.url("/gen/\(size)?seed=31").absoluteString
        try await curlPrefix(url, count: prefix, to: "x.bin", in: workspace.folder)
        workspace.server.resetStats()
        let result = try await CLIRunner.run([url, "-o", "x.bin", "-c", "-n", "1"], in: workspace.folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("continuing"), "\(result.stderr)")
        #expect(result.stderr.contains("resumed after"), "\(result.stderr)")
        #expect(
            FileManager.default.contents(atPath: workspace.folder + "/x.bin")
                == Data(FixtureContent.bytes(count: size, seed: 31)))
        // The rest, and the one window that proved the prefix: nothing of the prefix again.
        #expect(workspace.server.stats.bodyBytesSent == Int64(size - prefix + overlap))

        // With the default connection count too.
        try FileManager.default.removeItem(atPath: workspace.folder + "/x.bin")
        try await curlPrefix(url, count: prefix, to: "x.bin", in: workspace.folder)
        let parallel = try await CLIRunner.run([url, "-o", "x.bin", "-c"], in: workspace.folder)
        #expect(parallel.status == 0, "\(parallel.stderr)")
        #expect(
            FileManager.default.contents(atPath: workspace.folder + "/x.bin")
                == Data(FixtureContent.bytes(count: size, seed: 31)))
    }

    /// A continued download that is stopped resumes from its journal, and its verified whole then
    /// replaces the prefix it began from.
    @Test func aContinuedDownloadStoppedAndResumedReplacesThePrefix() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-continue-stop")
        // 2 MiB at 400 kB/s on one connection: five seconds; -m 1 stops it after one.
        let url = workspace.server.url("/gen/\(size)?seed=41&rate=400000").absoluteString
        try await curlPrefix(url, count: prefix, to: "x.bin", in: workspace.folder)
        let stopped = try await CLIRunner.run(
            [url, "-o", "x.bin", "-c", "-n", "1", "-m", "1"], in: workspace.folder)
        #expect(stopped.status == 3, "\(stopped.stderr)")
        #expect(FileManager.default.fileExists(atPath: workspace.folder + "/x.bin.part"))
        let resumed = try await CLIRunner.run([url, "-o", "x.bin", "-c", "-n", "4"], in: workspace.folder)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(
            FileManager.default.contents(atPath: workspace.folder + "/x.bin")
                == Data(FixtureContent.bytes(count: size, seed: 41)))
        #expect(!FileManager.default.fileExists(atPath: workspace.folder + "/x.bin.part"))
    }

    /// What a downloader that writes at offsets leaves (its control file beside the file, or holes
    /// in it), a file as long as the server's, and a tail of one repeated byte prove nothing: each
    /// is refused (exit 6, saying why) and left as it is, unless a checksum can check it; --force
    /// replaces it without continuing it.
    @Test func whatCannotBeProvenIsNotContinued() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-continue-unproven")
        let folder = workspace.folder
        let url = workspace.server.url("/gen/\(size)?seed=71").absoluteString
        let content = Data(FixtureContent.bytes(count: size, seed: 71))
        func run(_ name: String, _ extra: [String] = []) async throws -> CLIRunner.Result {
            try await CLIRunner.run([url, "-o", name, "-c"] + extra, in: folder)
        }
        func contents(_ name: String) -> Data? { FileManager.default.contents(atPath: folder + "/" + name) }

        // aria2c's control file beside a prefix whose end matches.
        try content.prefix(prefix).write(to: URL(fileURLWithPath: folder + "/a.bin"))
        try Data().write(to: URL(fileURLWithPath: folder + "/a.bin.aria2"))
        let aria2 = try await run("a.bin")
        #expect(aria2.status == 6, "\(aria2.stderr)")
        #expect(aria2.stderr.contains("a.bin.aria2 beside it"), "\(aria2.stderr)")
        #expect(contents("a.bin") == content.prefix(prefix))

        // A hole before the end, the end itself the server's bytes.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: folder + "/h.bin").creating())
        try handle.truncate(atOffset: UInt64(prefix))
        try handle.seek(toOffset: UInt64(prefix - overlap))
        try handle.write(contentsOf: content[(prefix - overlap)..<prefix])
        try handle.close()
        let holes = try await run("h.bin")
        #expect(holes.status == 6, "\(holes.stderr)")
        #expect(holes.stderr.contains("it has holes"), "\(holes.stderr)")

        // The whole file, without and with a checksum.
        try content.write(to: URL(fileURLWithPath: folder + "/full.bin"))
        let whole = try await run("full.bin")
        #expect(whole.status == 6, "\(whole.stderr)")
        #expect(whole.stderr.contains("no end is left to prove"), "\(whole.stderr)")
        let digest = try await CLIRunner.shell("sha256sum full.bin", in: folder)
        let hex = String(digest.stdout.prefix(64))
        let checked = try await run("full.bin", ["--checksum", "sha256=\(hex)"])
        #expect(checked.status == 0, "\(checked.stderr)")

        // A tail of zeros.
        try Data(count: prefix).write(to: URL(fileURLWithPath: folder + "/z.bin"))
        let zeros = try await run("z.bin")
        #expect(zeros.status == 6, "\(zeros.stderr)")
        #expect(zeros.stderr.contains("one repeated byte"), "\(zeros.stderr)")
        #expect(contents("z.bin") == Data(count: prefix))
        let forced = try await run("z.bin", ["--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(contents("z.bin") == content)
    }

    /// A continued download's verified whole replaces only a file it begins with: a file the user
    /// put there while a download was interrupted is left alone (exit 7), an empty one is replaced.
    @Test func onlyAFileTheDownloadBeginsWithIsReplaced() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-continue-replace")
        let folder = workspace.folder
        let url = workspace.server.url("/gen/\(size)?seed=72&rate=500000").absoluteString
        let stopped = try await CLIRunner.run([url, "-o", "r.bin", "-n", "1", "-m", "1"], in: folder)
        #expect(stopped.status == 3, "\(stopped.stderr)")
        try Data("mine".utf8).write(to: URL(fileURLWithPath: folder + "/r.bin"))
        let resumed = try await CLIRunner.run([url, "-o", "r.bin", "-c"], in: folder)
        #expect(resumed.status == 7, "\(resumed.stderr)")
        #expect(FileManager.default.contents(atPath: folder + "/r.bin") == Data("mine".utf8))

        let small = workspace.server.url("/gen/100000?seed=73").absoluteString
        try Data().write(to: URL(fileURLWithPath: folder + "/e.bin"))
        let empty = try await CLIRunner.run([small, "-o", "e.bin", "-c"], in: folder)
        #expect(empty.status == 0, "\(empty.stderr)")
        #expect(
            FileManager.default.contents(atPath: folder + "/e.bin")
                == Data(FixtureContent.bytes(count: 100_000, seed: 73)))
    }

    /// The prefix of another file, or a file longer than the server's: exit 6, a message that says
    /// so, and the file as it was. Without -c the file is not touched either (exit 7).
    @Test func aFileThatIsNotTheBeginningIsLeftAsItIs() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-continue-other")
        let url = workspace.server.url("/gen/\(size)?seed=31").absoluteString
        let other = workspace.server.url("/gen/\(size)?seed=32").absoluteString
        try await curlPrefix(other, count: prefix, to: "x.bin", in: workspace.folder)
        let before = FileManager.default.contents(atPath: workspace.folder + "/x.bin")
        let refused = try await CLIRunner.run([url, "-o", "x.bin", "-c"], in: workspace.folder)
        #expect(refused.status == 6, "\(refused.stderr)")
        #expect(refused.stderr.contains("is not the beginning of"), "\(refused.stderr)")
        #expect(refused.stderr.contains("it is left as it is"), "\(refused.stderr)")
        #expect(FileManager.default.contents(atPath: workspace.folder + "/x.bin") == before)

        let plain = try await CLIRunner.run([url, "-o", "x.bin"], in: workspace.folder)
        #expect(plain.status == 7, "\(plain.stderr)")
        #expect(FileManager.default.contents(atPath: workspace.folder + "/x.bin") == before)

        let long = Data(repeating: 7, count: size + 10)
        try long.write(to: URL(fileURLWithPath: workspace.folder + "/long.bin"))
        let longer = try await CLIRunner.run([url, "-o", "long.bin", "-c"], in: workspace.folder)
        #expect(longer.status == 6, "\(longer.stderr)")
        #expect(longer.stderr.contains("more than the"), "\(longer.stderr)")
        #expect(FileManager.default.contents(atPath: workspace.folder + "/long.bin") == long)
    }
}

extension URL {
    /// The URL, after an empty file was created there.
    fileprivate func creating() -> URL {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        return self
    }
}
