import FastpullFixtures
import Foundation
import Testing

/// The manager when the network goes away: the daemon runs in a namespace whose one link (a veth to
/// the host, where the server is; no default route) is taken down for 30 s in the middle of a
/// download, then up again. The item waits (status `waiting`, saying it waits for the network), never
/// ends in `error`, and finishes with the right bytes once the link is back.
@Suite(
    "Network drops",
    .enabled(if: NetworkNamespace.unavailableReason == nil, "needs root and iproute2")
)
struct NetworkDropTests {
    static let script = #"""
        import json, subprocess, sys, time, urllib.request
        port, url, interface = sys.argv[1:4]
        def call(method, *params):
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": ["token:s", *params]}).encode()
            request = urllib.request.Request("http://127.0.0.1:%s/jsonrpc" % port, body)
            return json.loads(urllib.request.urlopen(request, timeout=10).read())["result"]
        gid = call("aria2.addUri", [url], {"out": "drop.bin"})
        def status():
            return call("aria2.tellStatus", gid, ["status", "completedLength", "errorMessage", "errorCode"])
        for _ in range(600):
            if int(status()["completedLength"]) > 1 << 20:
                break
            time.sleep(0.05)
        seen = {"before": status()["status"], "offline": [], "notes": []}
        subprocess.run(["ip", "link", "set", interface, "down"], check=True)
        end = time.time() + 30
        while time.time() < end:
            now = status()
            if now["status"] not in seen["offline"]:
                seen["offline"].append(now["status"])
            note = "%s: %s" % (now["status"], now.get("errorMessage", ""))
            if now.get("errorMessage") and note not in seen["notes"]:
                seen["notes"].append(note)
            time.sleep(0.25)
        subprocess.run(["ip", "link", "set", interface, "up"], check=True)
        back = time.time()
        for _ in range(1200):
            if status()["status"] in ("complete", "error"):
                break
            time.sleep(0.05)
        seen["after"] = status()["status"]
        seen["seconds_to_finish"] = round(time.time() - back, 1)
        print(json.dumps(seen))
        """#

    @Test func anItemWaitsForTheNetworkAndFinishes() async throws {
        let namespace = try await NetworkNamespace.create()
        do {
            try await run(in: namespace)
        } catch {
            await namespace.remove()
            throw error
        }
        await namespace.remove()
    }

    private func run(in namespace: NetworkNamespace) async throws {
        try await InteropFolder.with("network-drop") { folder in
            let link = try await namespace.linkToHost()
            // The server is on the host's end of the link, 8 MiB at 1 MB/s in all: the drop lands
            // mid-download.
            var settings = FixtureServer.Configuration()
            settings.host = link.hostAddress
            settings.totalRate = 1_000_000
            let server = try FixtureServer(settings)
            let (daemon, port) = try await DaemonHarness.start(
                in: folder, ["--rpc-secret", "s"], namespace: namespace)
            let url = server.url("/gen/\(8 << 20)?seed=71").absoluteString
            let result = try await DaemonHarness.python(
                Self.script, arguments: [String(port), url, link.namespaceInterface], namespace: namespace)
            daemon.interrupt()
            _ = await daemon.finished()
            #expect(result.status == 0, "\(result.stderr)")
            let seen =
                try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] ?? [:]
            let offline = seen["offline"] as? [String] ?? []
            let notes = seen["notes"] as? [String] ?? []
            #expect(seen["before"] as? String == "active", "\(seen)")
            #expect(!offline.contains("error"), "\(seen)")
            #expect(offline.contains("waiting"), "\(seen)")
            #expect(notes.contains { $0.hasPrefix("waiting: waiting for the network") }, "\(seen)")
            #expect(seen["after"] as? String == "complete", "\(seen)")
            let bytes = try Data(contentsOf: URL(fileURLWithPath: folder + "/drop.bin"))
            #expect(bytes == Data(FixtureContent.bytes(count: 8 << 20, seed: 71)))
        }
    }
}
