import FastpullFixtures
import Foundation
import Testing

/// A curl habit typed at fastpull: `-fsSL -O` with wget's `-P` saves the file, quietly, where `-P` says.
@Suite("Other tools' spellings on the command line")
struct OptionAliasesCLITests {
    @Test func curlAndWgetHabitsWork() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-aliases")
        let url = workspace.server.url("/gen/65536?seed=14").absoluteString
        let result = try await CLIRunner.run(
            ["-fsSL", "-O", url, "-P", "sub", "--retry", "2"], in: workspace.folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty, "quiet: \(result.stderr)")
        #expect(
            FileManager.default.contents(atPath: workspace.folder + "/sub/65536")
                == Data(FixtureContent.bytes(count: 65536, seed: 14)))
        // wget's -nc: the file there is kept, exit 0.
        let kept = try await CLIRunner.run(["-nc", url, "-P", "sub"], in: workspace.folder)
        #expect(kept.status == 0, "\(kept.stderr)")
        #expect(kept.stderr.contains("kept as it is (--no-clobber)"), "\(kept.stderr)")
    }

    /// An output in folders that do not exist yet, given with `-o` or on a list's line: the folders
    /// are made (aria2 makes them; curl with --create-dirs). Before: exit 7.
    @Test func outputFoldersAreMade() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-folders")
        let url = workspace.server.url("/gen/4096?seed=15").absoluteString
        let single = try await CLIRunner.run([url, "-o", "a/b/one.bin"], in: workspace.folder)
        #expect(single.status == 0, "\(single.stderr)")
        #expect(FileManager.default.contents(atPath: workspace.folder + "/a/b/one.bin")?.count == 4096)
        try "\(url) c/two.bin\n".write(
            toFile: workspace.folder + "/list.txt", atomically: true, encoding: .utf8)
        let listed = try await CLIRunner.run(["-i", "list.txt"], in: workspace.folder)
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(FileManager.default.contents(atPath: workspace.folder + "/c/two.bin")?.count == 4096)
    }

    /// `--total-rate` holds for every file of the run together: two files of 512 KiB at once under
    /// 512 KiB/s cannot end before 2 s (a lower bound the limiter makes certain).
    @Test func aTotalRateHoldsForAllFiles() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-total-rate")
        let urls = (0..<2).map {
            workspace.server.url("/gen/\((512 << 10) + $0)?seed=\(40 + $0)").absoluteString
        }
        let started = ContinuousClock.now
        let result = try await CLIRunner.run(
            ["-q", "-j", "2", "--total-rate", "512K/s"] + urls, in: workspace.folder)
        let took = ContinuousClock.now - started
        #expect(result.status == 0, "\(result.stderr)")
        #expect(took >= .milliseconds(2000 - 40), "\(took)")
        let bad = try await CLIRunner.run(["--total-rate", "fast"] + urls, in: workspace.folder)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("--total-rate"), "\(bad.stderr)")
    }
}
