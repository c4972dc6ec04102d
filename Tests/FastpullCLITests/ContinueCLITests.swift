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
