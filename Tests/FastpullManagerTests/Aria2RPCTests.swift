import FastpullFixtures
import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullManager

/// The daemon's aria2 JSON-RPC over HTTP, as a front-end calls it: add, watch, pause, order, remove,
/// batches and `system.multicall`, the secret, and aria2's answers to what it does not do.
final class Aria2RPCTests {
    let folder: URL
    let server: FixtureServer
    var daemon: ManagerDaemon!

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "fastpull-rpc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // A cap on the server's total: how long a transfer runs does not depend on how many
        // connections the count reaches, so a pause or a change meant for a running transfer meets one.
        var capped = FixtureServer.Configuration()
        capped.totalRate = 4_000_000
        server = try FixtureServer(capped)
    }

    deinit { try? FileManager.default.removeItem(at: folder) }

    /// Runs `body` with a daemon listening on a free port, and stops the daemon afterwards, whatever
    /// `body` did.
    func withDaemon(
        secret: String? = nil, maximumActive: Int = 5, sessionPath: String? = nil, inputPath: String? = nil,
        sessionInterval: Int = 0,
        _ body: () async throws -> Void
    ) async throws {
        var settings = ManagerDaemon.Settings(
            listPath: folder.appendingPathComponent("list.sqlite").path, directory: folder.path)
        settings.port = 0
        settings.secret = secret
        settings.maximumActive = maximumActive
        settings.sessionPath = sessionPath
        settings.inputPath = inputPath
        settings.sessionInterval = sessionInterval
        daemon = try ManagerDaemon(settings)
        do {
            try await body()
        } catch {
            await daemon.stop()
            throw error
        }
        await daemon.stop()
    }

    /// POSTs `body` to `/jsonrpc`; returns the status and the parsed answer.
    func post(_ body: String) async throws -> (status: Int, answer: JSONValue?) {
        let response = try await LoopbackHTTPClient(port: daemon.port).send(
            .init(method: "POST", target: "/jsonrpc", body: Data(body.utf8)))
        return (response.status, JSONInput.parse(Array(response.body)))
    }

    func call(_ method: String, _ params: String = "[]") async throws -> JSONValue? {
        try await post(#"{"jsonrpc":"2.0","id":"q","method":"\#(method)","params":\#(params)}"#).answer
    }

    @Test func addWatchAndFinishAsAFrontEndDoes() async throws {
        try await withDaemon {
            let url = server.url("/gen/\(1 << 20)?seed=8").absoluteString
            let added = try await call(
                "aria2.addUri", #"[["\#(url)"], {"dir": "\#(folder.path)", "out": "a.bin", "split": 4}]"#)
            let gid = try #require(added?["result"]?.string)
            #expect(gid.count == 16)
            #expect(
                try await waitFor {
                    try await self.call("aria2.tellStatus", #"["\#(gid)", ["status"]]"#)?["result"]?[
                        "status"]?
                        .string == "complete"
                })
            let status = try #require(try await call("aria2.tellStatus", #"["\#(gid)"]"#)?["result"])
            #expect(status["totalLength"]?.string == String(1 << 20))
            #expect(status["completedLength"]?.string == String(1 << 20))
            #expect(status["dir"]?.string == folder.path)
            #expect(status["files"]?.array?.first?["path"]?.string == folder.path + "/a.bin")
            #expect(
                try Data(contentsOf: folder.appendingPathComponent("a.bin"))
                    == Data(FixtureContent.bytes(count: 1 << 20, seed: 8)))
            #expect(try await call("aria2.tellStopped", "[0, 10]")?["result"]?.array?.count == 1)
            #expect(try await call("aria2.getGlobalStat")?["result"]?["numStopped"]?.string == "1")
            #expect(try await call("aria2.removeDownloadResult", #"["\#(gid)"]"#)?["result"]?.string == "OK")
            #expect(try await call("aria2.tellStatus", #"["\#(gid)"]"#)?["error"]?["code"]?.integer == 1)
        }
    }

    /// Pause is `paused` at once in what tellStatus says; the queue's order moves as changePosition asks.
    @Test func pauseOrderAndRemoveOverRPC() async throws {
        try await withDaemon(maximumActive: 1) {
            let slow = server.url("/gen/\(64 << 20)?seed=9&rate=1000000").absoluteString
            var gids: [String] = []
            for index in 0..<3 {
                let answer = try await call("aria2.addUri", #"[["\#(slow)"], {"out": "s\#(index).bin"}]"#)
                gids.append(try #require(answer?["result"]?.string))
            }
            #expect(
                try await call("aria2.tellActive", #"[["gid"]]"#)?["result"]?.array?.compactMap {
                    $0["gid"]?.string
                } == [gids[0]])
            #expect(
                try await call("aria2.changePosition", #"["\#(gids[2])", 0, "POS_SET"]"#)?["result"]?.integer
                    == 0)
            #expect(
                try await call("aria2.tellWaiting", #"[0, 10, ["gid"]]"#)?["result"]?.array?.compactMap {
                    $0["gid"]?.string
                } == [gids[2], gids[1]])
            #expect(try await call("aria2.pause", #"["\#(gids[0])"]"#)?["result"]?.string == gids[0])
            #expect(
                try await call("aria2.tellStatus", #"["\#(gids[0])", ["status"]]"#)?["result"]?["status"]?
                    .string
                    == "paused")
            // The place it freed goes to the first in line.
            #expect(
                try await waitFor {
                    try await self.call("aria2.tellStatus", #"["\#(gids[2])", ["status"]]"#)?["result"]?[
                        "status"]?
                        .string == "active"
                })
            // A running item shows its live progress: its size, the bytes in, a speed.
            #expect(
                try await waitFor {
                    let live = try await self.call("aria2.tellStatus", #"["\#(gids[2])"]"#)?["result"]
                    return Int(live?["completedLength"]?.string ?? "") ?? 0 > 0
                        && live?["totalLength"]?.string == String(64 << 20)
                        && Int(live?["downloadSpeed"]?.string ?? "") ?? 0 > 0
                })
            #expect(try await call("aria2.remove", #"["\#(gids[1])"]"#)?["result"]?.string == gids[1])
            #expect(
                try await call("aria2.tellStatus", #"["\#(gids[1])", ["status"]]"#)?["result"]?["status"]?
                    .string
                    == "removed")
            // Pausing what is removed: aria2's error.
            #expect(try await call("aria2.pause", #"["\#(gids[1])"]"#)?["error"]?["code"]?.integer == 1)
        }
    }

    /// aria2's per-download options that matter to the bytes are applied: a checksum (aria2's
    /// `sha-256=` spelling) verifies the file or fails the item; a malformed one is refused when the
    /// download is added; `http-user`/`http-passwd` reach a server that wants them.
    @Test func checksumsAndCredentialsPerDownload() async throws {
        var settings = FixtureServer.Configuration()
        settings.basicCredentials = (user: "ann", password: "pw")
        let guarded = try FixtureServer(settings)
        try await withDaemon {
            let size = 1 << 20
            let url = server.url("/gen/\(size)?seed=31").absoluteString
            let digest = Digest(.sha256)
            digest.update(FixtureContent.bytes(count: size, seed: 31))
            let right = Digest.hex(digest.finalize())
            let good = try await call(
                "aria2.addUri", #"[["\#(url)"], {"out": "good.bin", "checksum": "sha-256=\#(right)"}]"#)
            let bad = try await call(
                "aria2.addUri",
                #"[["\#(url)"], {"out": "bad.bin", "checksum": "sha-256=\#(String(repeating: "0", count: 64))"}]"#
            )
            let malformed = try await call("aria2.addUri", #"[["\#(url)"], {"checksum": "sha-256=xyz"}]"#)
            #expect(malformed?["error"]?["code"]?.integer == 1, "\(String(describing: malformed))")
            let user = try await call(
                "aria2.addUri",
                #"[["\#(guarded.url("/gen/1000?seed=32").absoluteString)"], {"out": "user.bin", "http-user": "ann", "http-passwd": "pw"}]"#
            )
            let gids = [good, bad, user].map { $0?["result"]?.string ?? "" }
            #expect(
                try await waitFor {
                    for gid in gids {
                        let status = try await self.call("aria2.tellStatus", #"["\#(gid)", ["status"]]"#)?[
                            "result"]?["status"]?.string
                        if status != "complete" && status != "error" { return false }
                    }
                    return true
                })
            let states = try await gids.asyncMap {
                try await self.call("aria2.tellStatus", #"["\#($0)"]"#)?["result"]
            }
            #expect(states[0]?["status"]?.string == "complete")
            #expect(states[1]?["status"]?.string == "error")
            // aria2's code for a failed checksum.
            #expect(states[1]?["errorCode"]?.string == "32")
            #expect(
                states[1]?["errorMessage"]?.string?.contains("sha256") == true,
                "\(String(describing: states[1]))")
            #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("bad.bin").path))
            #expect(states[2]?["status"]?.string == "complete", "\(String(describing: states[2]))")
        }
    }

    /// One daemon per list: a second on the same list is refused with a message that says what to do.
    @Test func oneDaemonPerList() async throws {
        try await withDaemon {
            var settings = ManagerDaemon.Settings(
                listPath: folder.appendingPathComponent("list.sqlite").path, directory: folder.path)
            settings.port = 0
            #expect(throws: ManagerDaemon.ListInUse.self) { try ManagerDaemon(settings) }
            #expect(
                "\(ManagerDaemon.ListInUse(path: "x"))".contains("another fastpull daemon uses the list x"))
        }
    }

    /// The daemon's own page at `/`: the list with its controls, and its calls (same origin) answered
    /// while another origin's are refused.
    @Test func itsOwnPage() async throws {
        try await withDaemon {
            let client = LoopbackHTTPClient(port: daemon.port)
            let page = try await client.send(.init(method: "GET", target: "/"))
            #expect(page.status == 200)
            #expect(page.header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(page.header("X-Frame-Options") == "DENY")
            for control in [
                "fastpull downloads", "aria2.pause", "aria2.unpause", "aria2.remove", "aria2.addUri",
                "createElement(\"progress\")",
            ] {
                #expect(page.text.contains(control), "\(control)")
            }
            let body = Data(#"{"jsonrpc":"2.0","id":1,"method":"aria2.getGlobalStat","params":[]}"#.utf8)
            let own = try await client.send(
                .init(
                    method: "POST", target: "/jsonrpc",
                    headers: [("Origin", "http://127.0.0.1:\(daemon.port)")], body: body))
            #expect(own.status == 200)
            let other = try await client.send(
                .init(
                    method: "POST", target: "/jsonrpc", headers: [("Origin", "http://127.0.0.1:1")],
                    body: body))
            #expect(other.status == 403)
        }
    }

    /// A web page cannot drive it: a request that carries `Origin` (every cross-origin fetch, even
    /// `no-cors` with a text body) is refused, and so is one whose `Host` is not a loopback name (DNS
    /// rebinding). A front-end's request, with neither, is answered.
    @Test func webPagesAreRefused() async throws {
        try await withDaemon {
            let client = LoopbackHTTPClient(port: daemon.port)
            let body = Data(#"{"jsonrpc":"2.0","id":1,"method":"aria2.getVersion","params":[]}"#.utf8)
            let fromPage = try await client.send(
                .init(
                    method: "POST", target: "/jsonrpc",
                    headers: [("Origin", "http://evil.example"), ("Content-Type", "text/plain")], body: body))
            #expect(fromPage.status == 403)
            let rebound = try await client.send(
                .init(
                    method: "POST", target: "/jsonrpc", headers: [("Host", "evil.example:6800")], body: body))
            #expect(rebound.status == 403)
            let plain = try await client.send(.init(method: "POST", target: "/jsonrpc", body: body))
            #expect(plain.status == 200)
            #expect(plain.text.contains("1.36.0"))
        }
        #expect(ManagerDaemon.isLoopbackHost("127.0.0.1:6800") && ManagerDaemon.isLoopbackHost("localhost"))
        #expect(
            ManagerDaemon.isLoopbackHost("[::1]:6800")
                && !ManagerDaemon.isLoopbackHost("127.0.0.1.evil.example"))
        // The page over the network (--rpc-listen-all): its own origin when reached by address, never
        // by a name that may have been rebound, nor from another origin.
        #expect(ManagerDaemon.isOwnOrigin("http://192.168.1.5:6800", host: "192.168.1.5:6800"))
        #expect(ManagerDaemon.isOwnOrigin("http://[fd00::5]:6800", host: "[fd00::5]:6800"))
        #expect(!ManagerDaemon.isOwnOrigin("http://evil.example:6800", host: "evil.example:6800"))
        #expect(!ManagerDaemon.isOwnOrigin("http://evil.example", host: "192.168.1.5:6800"))
        #expect(ManagerDaemon.isOwnOrigin("http://127.0.0.1:6800", host: "127.0.0.1:6800"))
    }

    /// With a secret, a call without it is refused; batches and multicall answer each call.
    @Test func theSecretBatchesAndUnknownMethods() async throws {
        try await withDaemon(secret: "s3cret") {
            let refused = try await call("aria2.getVersion")
            #expect(refused?["error"]?["message"]?.string == "Unauthorized")
            #expect(try await call("aria2.getVersion", #"["token:wrong"]"#)?["error"]?["code"]?.integer == 1)
            #expect(
                try await call("aria2.getVersion", #"["token:s3cret"]"#)?["result"]?["version"]?.string
                    == "1.36.0")
            let methods = try await call("system.listMethods")?["result"]?.array?.compactMap(\.string) ?? []
            #expect(methods.contains("aria2.addUri") && methods.contains("system.multicall"))
            #expect(
                try await call("aria2.nosuch", #"["token:s3cret"]"#)?["error"]?["message"]?.string
                    == "No such method: aria2.nosuch")
            #expect(
                try await call("aria2.addTorrent", #"["token:s3cret", ""]"#)?["error"]?["message"]?.string
                    == "BitTorrent is not supported")

            let batch = try await post(
                #"[{"jsonrpc":"2.0","id":1,"method":"aria2.getGlobalStat","params":["token:s3cret"]},{"jsonrpc":"2.0","id":2,"method":"aria2.getVersion","params":[]}]"#
            )
            #expect(batch.status == 200)
            #expect(batch.answer?.array?.count == 2)
            #expect(batch.answer?.array?.first?["result"]?["numActive"]?.string == "0")
            #expect(batch.answer?.array?.last?["error"]?["message"]?.string == "Unauthorized")

            let multi = try await call(
                "system.multicall",
                #"[[{"methodName":"aria2.getVersion","params":["token:s3cret"]},{"methodName":"aria2.tellStatus","params":["token:s3cret","0000000000000001"]}]]"#
            )
            let results = multi?["result"]?.array ?? []
            #expect(results.count == 2)
            #expect(results.first?.array?.first?["version"]?.string == "1.36.0")
            #expect(results.last?["code"]?.integer == 1)
            #expect(try await post("not json").answer?["error"]?["code"]?.integer == -32700)
        }
    }
}

extension Array {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
