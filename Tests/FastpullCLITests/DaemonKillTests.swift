import FastpullFixtures
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `kill -9` of the daemon with an item in every state, then a start on the same list: each is where
/// it was — the finished, failed and removed ones history, the paused one paused — the active one
/// resumes from its journal and the waiting one runs after it; nothing finished is fetched again.
extension DaemonCLITests {
    @Test func aKillInEveryStateLosesNothing() async throws {
        let finishedServer = try FixtureServer()
        var slow = FixtureServer.Configuration()
        slow.totalRate = 2_000_000
        let server = try FixtureServer(slow)
        let list = folder.appendingPathComponent("list.sqlite").path
        let arguments = ["daemon", "--list", list, "--dir", folder.path, "-j", "1"]
        let first = try await start(arguments)
        let token = try secret()
        func add(_ url: String, _ options: String) async throws -> String {
            let answer = try await call(
                first.port, "aria2.addUri", #"[["\#(url)"], \#(options)]"#, token: token)
            return try #require(answer["result"] as? String, "\(answer)")
        }
        let done = try await add(
            finishedServer.url("/gen/\(1 << 20)?seed=81").absoluteString, #"{"out": "done.bin"}"#)
        #expect(try await waitFor { try await status(first.port, done, token: token) == "complete" })
        let failed = try await add(
            finishedServer.url("/gen/1?status=404").absoluteString, #"{"out": "failed.bin"}"#)
        #expect(try await waitFor { try await status(first.port, failed, token: token) == "error" })
        let removed = try await add(
            server.url("/gen/1024?seed=82").absoluteString, #"{"out": "removed.bin", "pause": "true"}"#)
        _ = try await call(first.port, "aria2.remove", #"["\#(removed)"]"#, token: token)
        let paused = try await add(
            server.url("/gen/1024?seed=83").absoluteString, #"{"out": "paused.bin", "pause": "true"}"#)
        // Large enough that the server's 2 MB/s cannot finish it before the kill, however long the
        // status calls take on a loaded machine (12 MiB could: after the restart it was complete
        // at once, and the waiting one active); at most four connections, so that windows fetched
        // twice on the capped server stay few beside what the journal saves.
        let activeSize = 24 << 20
        let active = try await add(
            server.url("/gen/\(activeSize)?seed=84").absoluteString, #"{"out": "active.bin", "split": "4"}"#)
        let waiting = try await add(
            server.url("/gen/\(1 << 20)?seed=85").absoluteString, #"{"out": "waiting.bin"}"#)
        #expect(try await waitFor { server.stats.bodyBytesSent > 6 << 20 })
        let before = [
            done: "complete", failed: "error", removed: "removed", paused: "paused", active: "active",
            waiting: "waiting",
        ]
        for (gid, expected) in before {
            #expect(try await status(first.port, gid, token: token) == expected, "\(gid) before the kill")
        }
        let finishedBytes = finishedServer.stats.bodyBytesSent
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()
        let sentBefore = server.stats.bodyBytesSent

        let second = try await start(arguments)
        // At once: every item where it was (the active one running again, first in line).
        for (gid, expected) in before {
            let now = try await status(second.port, gid, token: token)
            #expect(now == expected, "\(gid) after the restart: \(now ?? "none"), not \(expected)")
        }
        #expect(try await waitFor(90) { try await status(second.port, waiting, token: token) == "complete" })
        #expect(try await status(second.port, active, token: token) == "complete")
        #expect(try await status(second.port, paused, token: token) == "paused")
        #expect(finishedServer.stats.bodyBytesSent == finishedBytes, "a finished item was fetched again")
        // The active one resumed: of the 6 MiB in before the kill, what the journal's checkpoints
        // (about one a second, 2 MB at this rate) had saved is not fetched again — at least 2 MiB.
        #expect(
            server.stats.bodyBytesSent - sentBefore < Int64(activeSize + (1 << 20) - (2 << 20)),
            "\(server.stats)")
        for (name, size, seed) in [
            ("active.bin", activeSize, 84), ("waiting.bin", 1 << 20, 85), ("done.bin", 1 << 20, 81),
        ] {
            #expect(
                try Data(contentsOf: folder.appendingPathComponent(name))
                    == Data(FixtureContent.bytes(count: size, seed: UInt64(seed))), "\(name)")
        }
        _ = try await call(second.port, "aria2.shutdown", token: token)
        let result = await CLIRunner.finish(second.process, second.out, second.err)
        #expect(result.status == 0, "\(result.stderr)")
    }
}
