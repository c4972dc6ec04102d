import FastpullFixtures
import Foundation
import Testing

/// aria2p, the aria2 client library and CLI (PyPI), driving `fastpull daemon` as it drives aria2c:
/// add with options, watch to the end, pause and resume, statistics, the list, and removal.
@Suite("aria2p drives fastpull daemon")
struct Aria2pTests {
    @Test func aria2pAddsWatchesPausesAndRemoves() async throws {
        try await InteropFolder.with("aria2p") { folder in
            // A cap on the server's total: the slow item is still running when the pause comes,
            // however many connections the count reaches.
            var capped = FixtureServer.Configuration()
            capped.totalRate = 4_000_000
            let server = try FixtureServer(capped)
            let (daemon, rpcPort) = try await DaemonHarness.start(in: folder, ["--rpc-secret", "s3"])
            let script = """
                import aria2p, json, sys, time
                api = aria2p.API(aria2p.Client(host="http://127.0.0.1", port=\(rpcPort), secret="s3"))
                fast = api.add_uris(["\(server.url("/gen/\(3 << 20)?seed=21").absoluteString)"], options={"out": "fast.bin"})
                slow = api.add_uris(["\(server.url("/gen/\(8 << 20)?seed=22&rate=2000000").absoluteString)"], options={"out": "slow.bin"})
                seen = {"added": [fast.gid, slow.gid]}
                api.pause([slow])
                slow.update()
                seen["after_pause"] = slow.status
                api.resume([slow])
                \(DaemonHarness.aria2pWait)
                seen["fast"] = wait(fast)
                seen["slow"] = wait(slow)
                seen["total_length"] = slow.total_length
                stats = api.get_stats()
                seen["stopped"] = stats.num_stopped
                seen["listed"] = sorted(d.gid for d in api.get_downloads())
                seen["purged"] = api.remove([fast], clean=False)
                seen["left"] = [d.gid for d in api.get_downloads()]
                print(json.dumps(seen))
                """
            let (seen, ended) = try await DaemonHarness.runThenStop(script, daemon)
            let added = seen["added"] as? [String] ?? []
            #expect(added.count == 2)
            #expect(seen["after_pause"] as? String == "paused", "\(seen)")
            #expect(seen["fast"] as? String == "complete", "\(seen)")
            #expect(seen["slow"] as? String == "complete", "\(seen)")
            #expect(seen["total_length"] as? Int == 8 << 20)
            #expect(seen["stopped"] as? Int == 2)
            #expect(seen["listed"] as? [String] == added.sorted())
            #expect(seen["left"] as? [String] == [added.last ?? ""], "\(seen)")
            let fast = try Data(contentsOf: URL(fileURLWithPath: folder + "/fast.bin"))
            let slow = try Data(contentsOf: URL(fileURLWithPath: folder + "/slow.bin"))
            #expect(fast == Data(FixtureContent.bytes(count: 3 << 20, seed: 21)))
            #expect(slow == Data(FixtureContent.bytes(count: 8 << 20, seed: 22)))
            #expect(ended.status == 0, "\(ended)")
        }
    }
}
