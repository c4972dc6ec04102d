import Foundation
import FastpullFixtures
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("kill -9 and resume")
struct KillResumeTests {
    /// Twenty `kill -9`s at random moments, then a run to the end: the file is byte-identical and the
    /// server sent at most 1.05 × size + connections × 1 MiB in all.
    @Test func twentyKillsInARow() throws {
        let server = try FixtureServer()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fastpull-kill-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }

        // 4 connections at 500 kB/s: each kill loses at most the last live checkpoint's 50 ms and the
        // slice each server thread was sending, far below the bound even twenty times over.
        let size = 24 << 20
        let connections = 4
        let url = server.url("/gen/\(size)?seed=9&rate=500000").absoluteString
        let arguments = ["-q", "-n", "\(connections)", url, "-o", "k.bin"]
        var generator = SystemRandomNumberGenerator()
        var kills = 0
        var finishedEarly = false
        for _ in 0..<20 {
            let (process, out, err) = try CLIRunner.start(arguments, in: folder)
            // Let it transfer for a random while (bounded), then kill it without warning.
            let deadline = Date().addingTimeInterval(Double.random(in: 0.15...0.6, using: &generator))
            while Date() < deadline && process.isRunning { usleep(5_000) }
            if !process.isRunning {
                finishedEarly = true
                _ = CLIRunner.finish(process, out, err)
                break
            }
            kill(process.processIdentifier, SIGKILL)
            let result = CLIRunner.finish(process, out, err)
            #expect(result.status == SIGKILL || result.status == 9 || process.terminationReason == .uncaughtSignal)
            kills += 1
        }
        #expect(kills >= 15, "the download finished too early to test much (finishedEarly: \(finishedEarly))")
        let final = try CLIRunner.run(arguments, in: folder)
        #expect(final.status == 0, "\(final.stderr)")
        let data = try #require(FileManager.default.contents(atPath: folder + "/k.bin"))
        #expect(data == Data(FixtureContent.bytes(count: size, seed: 9)))
        let bound = Int64(Double(size) * 1.05) + Int64(connections << 20)
        #expect(server.stats.bodyBytesSent <= bound, "sent \(server.stats.bodyBytesSent), bound \(bound)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
        #expect(leftovers == ["k.bin"])
    }
}
