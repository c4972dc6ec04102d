import FastpullFixtures
import Foundation
import Testing

/// `-m`/`--max-time`: the whole run stops after that long, keeps what it fetched, exits 3 and says
/// so; the same command without it resumes.
@Suite("fastpull --max-time")
struct TimeLimitCLITests {
    @Test func theRunStopsAtItsDeadlineAndTheSameCommandResumes() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-max-time")
        // 2 MiB at 500 kB/s on one connection: about four seconds.
        let url = workspace.server.url("/gen/\(2 << 20)?rate=500000&seed=21").absoluteString
        let stopped = try await CLIRunner.run(
            [url, "-o", "x.bin", "-n", "1", "-m", "1"], in: workspace.folder)
        #expect(stopped.status == 3, "\(stopped.stderr)")
        #expect(
            stopped.stderr.contains(
                "stopped: --max-time 1 s passed; what was fetched is kept: run the same command again to resume"
            ),
            "\(stopped.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.folder + "/x.bin"))
        let partial = workspace.folder + "/x.bin.part"
        let kept = (try? FileManager.default.attributesOfItem(atPath: partial)[.size] as? Int) ?? 0
        #expect(kept > 0, "no partial file kept")

        let resumed = try await CLIRunner.run([url, "-o", "x.bin", "-n", "1"], in: workspace.folder)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stderr.contains("resumed after"), "\(resumed.stderr)")
        #expect(
            FileManager.default.contents(atPath: workspace.folder + "/x.bin")
                == Data(FixtureContent.bytes(count: 2 << 20, seed: 21)))
    }

    /// `--retry-max-time`: a thousand retries of a refused port end once a second has passed since
    /// the first failure (exit 3, the connection's error), long before `-m` would stop the run.
    @Test func retriesEndWithTheirTimeLimit() async throws {
        let folder = try ScratchFolders.make("fastpull-retry-max-time").path
        let port = try LoopbackPort.free()
        let result = try await CLIRunner.run(
            [
                "http://127.0.0.1:\(port)/x", "--retries", "1000", "--retry-connrefused", "--retry-delay",
                "0.1",
                "--retry-max-time", "1", "-m", "30",
            ], in: folder)
        #expect(result.status == 3, "\(result.stderr)")
        #expect(result.stderr.contains("refused"), "\(result.stderr)")
        #expect(!result.stderr.contains("--max-time 30 s passed"), "\(result.stderr)")
    }

    @Test(arguments: ["abc", "-1", ""])
    func aBadTimeIsAUsageError(value: String) async throws {
        let folder = try ScratchFolders.make("fastpull-max-time-usage").path
        for option in ["--max-time", "--retry-max-time"] {
            let result = try await CLIRunner.run(["http://127.0.0.1:9/x", option, value], in: folder)
            #expect(result.status == 2)
            #expect(result.stderr.contains(option), "\(result.stderr)")
        }
    }
}
