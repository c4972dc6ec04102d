import FastpullFixtures
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("kill -9 and resume")
struct KillResumeTests {
    /// Twenty `kill -9`s at random moments, then a run to the end: the file is byte-identical and the
    /// server sent at most 1.05 × size + connections × 1 MiB in all.
    @Test func twentyKillsInARow() async throws {
        let server = try FixtureServer()
        let folder = try ScratchFolders.make("fastpull-kill").path
        defer { try? FileManager.default.removeItem(atPath: folder) }

        // 4 connections at 500 kB/s: each kill loses at most the last live checkpoint's 50 ms and the
        // slice each server thread was sending, far below the bound even twenty times over.
        let size = 24 << 20
        let connections = 4
        let url = server.url("/gen/\(size)?seed=9&rate=500000").absoluteString
        let arguments = ["-q", "-n", "\(connections)", url, "-o", "k.bin"]
        // The kill loop blocks while it watches the child: run it on a thread of its own.
        let (kills, finishedEarly, notKilled) = try await Self.killLoop(arguments: arguments, folder: folder)
        #expect(notKilled == 0, "every killed run must end by SIGKILL")
        #expect(kills >= 15, "the download finished too early to test much (finishedEarly: \(finishedEarly))")
        let final = try await CLIRunner.run(arguments, in: folder)
        #expect(final.status == 0, "\(final.stderr)")
        let data = try #require(FileManager.default.contents(atPath: folder + "/k.bin"))
        #expect(data == Data(FixtureContent.bytes(count: size, seed: 9)))
        let bound = Int64(Double(size) * 1.05) + Int64(connections << 20)
        #expect(server.stats.bodyBytesSent <= bound, "sent \(server.stats.bodyBytesSent), bound \(bound)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
        #expect(leftovers == ["k.bin"])
    }

    /// Starts and `kill -9`s the command up to twenty times; returns the kills, whether a run ended by
    /// itself first, and how many killed runs did not end by the signal.
    static func killLoop(arguments: [String], folder: String) async throws -> (Int, Bool, Int) {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result { try killLoopBlocking(arguments: arguments, folder: folder) })
            }.start()
        }
    }

    private static func killLoopBlocking(arguments: [String], folder: String) throws -> (Int, Bool, Int) {
        var generator = SystemRandomNumberGenerator()
        var kills = 0
        var notKilled = 0
        var finishedEarly = false
        for _ in 0..<20 {
            let (process, out, err) = try CLIRunner.start(arguments, in: folder)
            // Let it transfer for a random while (bounded), then kill it without warning.
            let deadline = Date().addingTimeInterval(Double.random(in: 0.15...0.6, using: &generator))
            while Date() < deadline && process.isRunning { usleep(5_000) }
            if !process.isRunning {
                finishedEarly = true
                _ = CLIRunner.finishBlocking(process, out, err)
                break
            }
            kill(process.processIdentifier, SIGKILL)
            let result = CLIRunner.finishBlocking(process, out, err)
            if !(result.status == SIGKILL && process.terminationReason == .uncaughtSignal) { notKilled += 1 }
            kills += 1
        }
        return (kills, finishedEarly, notKilled)
    }
}
