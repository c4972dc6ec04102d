import FastpullFixtures
import Foundation
import Testing

/// aria2's WebSocket on `/jsonrpc`: calls answered over it, and the notifications aria2p listens for
/// (start, pause, stop, complete, error) sent as the list changes; a web page of another origin cannot
/// open one.
@Suite("fastpull daemon's WebSocket")
struct WebSocketTests {
    @Test func aria2pHearsEveryNotificationAndCallsAnswerOverTheSocket() async throws {
        try await InteropFolder.with("websocket") { folder in
            let server = try FixtureServer()
            // The slow one at 1 MB/s in all, however many connections: still running when paused.
            var slowSettings = FixtureServer.Configuration()
            slowSettings.totalRate = 1_000_000
            let slowServer = try FixtureServer(slowSettings)
            let (daemon, rpcPort) = try await DaemonHarness.start(in: folder, ["--rpc-secret", "s3"])
            let script = """
                import aria2p, json, threading, time, websocket
                seen = {}
                socket = websocket.create_connection("ws://127.0.0.1:\(rpcPort)/jsonrpc")
                socket.send(json.dumps({"jsonrpc": "2.0", "id": "v", "method": "aria2.getVersion", "params": ["token:s3"]}))
                seen["version"] = json.loads(socket.recv())["result"]["version"]
                socket.send(json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "aria2.getGlobalStat", "params": ["token:s3"]},
                                        {"jsonrpc": "2.0", "id": 2, "method": "aria2.tellActive", "params": ["token:wrong"]}]))
                batch = json.loads(socket.recv())
                seen["batch"] = [sorted(batch[0]["result"].keys()), batch[1]["error"]["message"]]
                try:
                    websocket.create_connection("ws://127.0.0.1:\(rpcPort)/jsonrpc", origin="http://attacker.example")
                    seen["foreign"] = "opened"
                except websocket.WebSocketBadStatusException as error:
                    seen["foreign"] = error.status_code
                heard = []
                lock = threading.Lock()
                def hear(kind):
                    def callback(api, gid):
                        with lock:
                            heard.append([kind, gid])
                    return callback
                api = aria2p.API(aria2p.Client(host="http://127.0.0.1", port=\(rpcPort), secret="s3"))
                api.listen_to_notifications(threaded=True, on_download_start=hear("start"),
                    on_download_pause=hear("pause"), on_download_stop=hear("stop"),
                    on_download_complete=hear("complete"), on_download_error=hear("error"), timeout=1)
                def heard_of(kind, gid):
                    with lock:
                        return [kind, gid] in heard
                def wait_for(kind, gid, tries=400):
                    for _ in range(tries):
                        if heard_of(kind, gid):
                            return True
                        time.sleep(0.05)
                    return False
                # The listener connects in its own thread: failing downloads are added until one is
                # heard of, and from then on nothing can be missed.
                for _ in range(100):
                    probe = api.add_uris(["\(server.url("/gen/1?status=404").absoluteString)"], options={"out": "probe.bin"})
                    if wait_for("error", probe.gid, tries=20):
                        break
                fast = api.add_uris(["\(server.url("/gen/\(1 << 20)?seed=31").absoluteString)"], options={"out": "fast.bin"})
                missing = api.add_uris(["\(server.url("/gen/1?status=404").absoluteString)"], options={"out": "missing.bin"})
                slow = api.add_uris(["\(slowServer.url("/gen/\(8 << 20)?seed=32").absoluteString)"], options={"out": "slow.bin"})
                seen["fast"] = [wait_for("start", fast.gid), wait_for("complete", fast.gid)]
                seen["missing"] = [wait_for("start", missing.gid), wait_for("error", missing.gid)]
                wait_for("start", slow.gid)
                api.pause([slow])
                seen["slow_paused"] = wait_for("pause", slow.gid)
                api.remove([slow])
                seen["slow_removed"] = wait_for("stop", slow.gid)
                api.stop_listening()
                with lock:
                    seen["heard"] = heard
                print(json.dumps(seen))
                """
            let (seen, ended) = try await DaemonHarness.runThenStop(script, daemon)
            #expect(seen["version"] as? String == "1.36.0", "\(seen)")
            let batch = seen["batch"] as? [Any] ?? []
            #expect((batch.first as? [String])?.contains("numActive") == true, "\(seen)")
            #expect(batch.last as? String == "Unauthorized", "\(seen)")
            #expect(seen["foreign"] as? Int == 403, "\(seen)")
            #expect(seen["fast"] as? [Bool] == [true, true], "\(seen)")
            #expect(seen["missing"] as? [Bool] == [true, true], "\(seen)")
            #expect(seen["slow_paused"] as? Bool == true, "\(seen)")
            #expect(seen["slow_removed"] as? Bool == true, "\(seen)")
            let fast = try Data(contentsOf: URL(fileURLWithPath: folder + "/fast.bin"))
            #expect(fast == Data(FixtureContent.bytes(count: 1 << 20, seed: 31)))
            #expect(ended.status == 0, "\(ended)")
        }
    }

    /// A client that sends and never reads is closed once its unread answers pass 4 MiB, instead of
    /// piling them up in the daemon's memory; the daemon goes on answering others.
    @Test func aClientThatNeverReadsIsClosed() async throws {
        try await InteropFolder.with("websocket-unread") { folder in
            let (daemon, rpcPort) = try await DaemonHarness.start(in: folder, ["--rpc-secret", "s3"])
            let script = """
                import json, socket, urllib.request, websocket
                ws = websocket.create_connection("ws://127.0.0.1:\(rpcPort)/jsonrpc")
                ws.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "system.listMethods"})
                sent = 0
                try:
                    for _ in range(60000):
                        ws.send(call)
                        sent += 1
                except Exception:
                    pass
                received = 0
                ws.settimeout(10)
                try:
                    while True:
                        message = ws.recv()
                        if not message:
                            break
                        received += len(message)
                except Exception:
                    pass
                body = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "aria2.getVersion", "params": ["token:s3"]}).encode()
                version = json.loads(urllib.request.urlopen("http://127.0.0.1:\(rpcPort)/jsonrpc", body).read())["result"]["version"]
                print(json.dumps({"sent": sent, "received": received, "version": version}))
                """
            let (seen, ended) = try await DaemonHarness.runThenStop(script, daemon)
            let received = seen["received"] as? Int ?? -1
            // 60,000 answers of some 900 bytes would be 54 MB: far less came before the close.
            #expect(received >= 0 && received < 16 << 20, "\(seen)")
            #expect(seen["version"] as? String == "1.36.0", "\(seen)")
            #expect(ended.status == 0, "\(ended)")
        }
    }
}
