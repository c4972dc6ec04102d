import FastpullFixtures
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// XML-RPC on `/rpc`, as persepolis 3.0.1 drives aria2 (its `download.py`: `addUri` with its own GID
/// and options, `tellStatus` and `tellActive` with its keys, `changeOption` for a speed limit, pause,
/// remove, `removeDownloadResult`, `shutdown`) through Python's `xmlrpc.client`. The same script runs
/// against the real `aria2c` and against fastpull started as `aria2c` with the same flags, and every
/// answer is compared key by key: each key aria2 answers, fastpull answers with the same type, and
/// the values that do not depend on timing are equal.
@Suite("XML-RPC: persepolis's calls, aria2c and fastpull side by side")
struct XMLRPCTests {
    static let script = #"""
        import json, os, sys, time, xmlrpc.client
        port, link, slow, folder = sys.argv[1:5]
        server = xmlrpc.client.ServerProxy("http://localhost:%s/rpc" % port, allow_none=True)
        for _ in range(400):
            try:
                server.aria2.getVersion()
                break
            except OSError:
                time.sleep(0.025)
        def shape(value):
            if isinstance(value, dict):
                return {key: shape(item) for key, item in sorted(value.items())}
            if isinstance(value, list):
                return [shape(item) for item in value[:1]]
            return type(value).__name__
        record = []
        def call(label, name, *args, keep=lambda result: None):
            try:
                result = getattr(server, name)(*args)
                record.append({"label": label, "call": name, "shape": shape(result), "kept": keep(result)})
                return result
            except xmlrpc.client.Fault as fault:
                record.append({"label": label, "call": name, "shape": "fault", "kept": fault.faultCode})
                return None
        keys = ["status", "connections", "errorCode", "errorMessage", "downloadSpeed", "connections", "dir",
                "totalLength", "completedLength", "files"]
        call("version", "aria2.getVersion")
        gid = "1a2b3c4d5e6f7081"
        options = {"gid": gid, "max-tries": "5", "retry-wait": 0, "timeout": 60, "header": ["Cookie: a=b"],
                   "out": "persepolis.bin", "user-agent": "PersepolisDM/3.0.1", "max-download-limit": "0",
                   "split": "16", "max-connection-per-server": "16", "min-split-size": "1M", "continue": "true",
                   "dir": folder}
        call("add", "aria2.addUri", [link], options, keep=lambda result: result == gid)
        for _ in range(1200):
            status = server.aria2.tellStatus(gid, keys)
            if status["status"] in ("complete", "error"):
                break
            time.sleep(0.025)
        call("finished", "aria2.tellStatus", gid, keys, keep=lambda s: [s["status"], s["totalLength"],
             s["completedLength"], s["errorCode"], os.path.basename(s["files"][0]["path"]),
             s["files"][0]["uris"][0]["uri"] == link])
        call("active", "aria2.tellActive", ["gid"], keep=len)
        call("files-of-finished", "aria2.getFiles", gid, keep=lambda files: [f["length"] for f in files])
        call("uris-of-finished", "aria2.getUris", gid, keep=lambda uris: [u["uri"] == link for u in uris])
        second = "1a2b3c4d5e6f7082"
        call("add-paused", "aria2.addUri", [slow], {"gid": second, "pause": "true", "dir": folder, "out": "slow.bin"},
             keep=lambda result: result == second)
        call("paused", "aria2.tellStatus", second, ["gid", "status"], keep=lambda s: s["status"])
        call("uris-of-paused", "aria2.getUris", second, keep=lambda uris: [[u["uri"] == slow, u["status"]] for u in uris])
        call("limit", "aria2.changeOption", second, {"max-download-limit": "100K"})
        call("options", "aria2.getOption", second,
             keep=lambda o: [o.get("max-download-limit"), o.get("out"), o.get("dir") == folder])
        call("global-options", "aria2.getGlobalOption", keep=lambda o: o.get("dir") == folder)
        call("pause-finished", "aria2.pause", gid)
        call("remove", "aria2.remove", second, keep=lambda result: result == second)
        call("status-after-remove", "aria2.tellStatus", second, ["status"], keep=lambda s: s["status"])
        call("purge-removed", "aria2.removeDownloadResult", second)
        call("status-after-purge", "aria2.tellStatus", second, ["status"])
        call("unknown", "aria2.tellStatus", "0123456789abcdef", ["status"])
        call("stat", "aria2.getGlobalStat", keep=lambda s: [s["numActive"], s["numWaiting"]])
        call("multicall", "system.multicall", [{"methodName": "aria2.tellStatus", "params": [gid, ["status"]]},
                                  {"methodName": "aria2.tellStatus", "params": ["0123456789abcdef"]}],
             keep=lambda answers: [sorted(a.keys()) if isinstance(a, dict) else a for a in answers])
        call("methods", "system.listMethods", keep=sorted)
        call("purge-finished", "aria2.removeDownloadResult", gid)
        call("shutdown", "aria2.shutdown")
        print(json.dumps(record))
        """#

    /// The calls fastpull answers on purpose where aria2 answers a fault, and why.
    static let deliberate = [
        "uris-of-finished": "fastpull keeps a finished download's URIs; aria2 drops them",
        "status-after-remove":
            "a removed download stays as history; aria2 forgets one removed before it started",
        "purge-removed": "the removed download is still there to forget",
    ]

    /// Runs the script against `executable` started with persepolis's flags in `folder`; returns the
    /// answers recorded and how the server ended.
    static func replay(
        _ executable: String, in folder: String, link: String, slow: String
    ) async throws -> (record: [[String: Any]], server: FastpullProcess.Result) {
        let port = try LoopbackPort.free()
        let server = try FastpullProcess(
            executable: executable,
            [
                "--no-conf", "--enable-rpc", "--rpc-listen-port=\(port)", "--rpc-max-request-size=2M",
                "--quiet=true", "--dir=\(folder)",
            ], in: folder)
        let result = try await DaemonHarness.python(script, arguments: [String(port), link, slow, folder])
        // A script that failed before its shutdown call leaves the server running: it is stopped,
        // and the failure is reported below instead of the test waiting for ever.
        if result.status != 0 { server.kill() }
        let ended = await server.finished()
        #expect(result.status == 0, "\(executable): \(result.stderr)")
        let record =
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]] ?? []
        return (record, ended)
    }

    /// Whether `ours` answers every key of `theirs` with the same type (recursively).
    static func covers(_ ours: Any, _ theirs: Any) -> Bool {
        switch (ours, theirs) {
        case (let ours as [String: Any], let theirs as [String: Any]):
            return theirs.allSatisfy { key, value in ours[key].map { covers($0, value) } ?? false }
        case (let ours as [Any], let theirs as [Any]):
            return theirs.isEmpty || (ours.first.map { covers($0, theirs[0]) } ?? false)
        default:
            return "\(ours)" == "\(theirs)"
        }
    }

    @Test func persepolisCallsAnswerAsAria2cAnswers() async throws {
        try await InteropFolder.with("xmlrpc") { folder in
            let server = try FixtureServer()
            let link = server.url("/gen/\(3 << 20)?seed=51").absoluteString
            let slow = server.url("/gen/\(8 << 20)?seed=52&rate=100000").absoluteString
            let aria2Folder = folder + "/aria2c"
            let fastpullFolder = folder + "/fastpull"
            for path in [aria2Folder, fastpullFolder] {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            }
            // fastpull as a program that starts aria2c finds it: a link named aria2c.
            let dropIn = folder + "/bin/aria2c"
            try FileManager.default.createDirectory(
                atPath: folder + "/bin", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(
                atPath: dropIn, withDestinationPath: FastpullProcess.binary)
            let theirs = try await Self.replay("/usr/bin/aria2c", in: aria2Folder, link: link, slow: slow)
            let ours = try await Self.replay(dropIn, in: fastpullFolder, link: link, slow: slow)
            #expect(
                theirs.record.count == ours.record.count,
                "\(theirs.record.count) calls vs \(ours.record.count)")
            for (aria2, fastpull) in zip(theirs.record, ours.record) {
                let label = aria2["label"] as? String ?? "?"
                #expect(label == fastpull["label"] as? String)
                if let reason = Self.deliberate[label] {
                    // Where fastpull answers on purpose what aria2 refuses: aria2 must still refuse it
                    // (or the difference is gone), and fastpull must answer.
                    #expect("\(aria2["shape"] ?? "")" == "fault", "\(label): aria2c answered; \(reason)")
                    #expect("\(fastpull["shape"] ?? "")" != "fault", "\(label): fastpull refused; \(reason)")
                    continue
                }
                if label == "options" || label == "global-options" {
                    // aria2 lists every option it has; fastpull those that apply. Each it lists, aria2 has.
                    #expect(
                        Self.covers(aria2["shape"] ?? "", fastpull["shape"] ?? ""),
                        "\(label): fastpull answers \(fastpull["shape"] ?? ""), aria2c \(aria2["shape"] ?? "")"
                    )
                } else {
                    #expect(
                        Self.covers(fastpull["shape"] ?? "", aria2["shape"] ?? ""),
                        "\(label): aria2c answers \(aria2["shape"] ?? ""), fastpull \(fastpull["shape"] ?? "")"
                    )
                }
                if label == "methods" {
                    let missing = Set(aria2["kept"] as? [String] ?? []).subtracting(
                        fastpull["kept"] as? [String] ?? [])
                    let torrentOnly = missing.filter { $0.contains("Torrent") || $0.contains("Peers") }
                    #expect(
                        missing == torrentOnly,
                        "aria2c answers methods fastpull does not: \(missing.sorted())")
                } else {
                    #expect(
                        "\(aria2["kept"] ?? "")" == "\(fastpull["kept"] ?? "")",
                        "\(label): aria2c kept \(aria2["kept"] ?? ""), fastpull \(fastpull["kept"] ?? "")")
                }
            }
            #expect(ours.server.status == 0, "\(ours.server)")
            let bytes = try Data(contentsOf: URL(fileURLWithPath: fastpullFolder + "/persepolis.bin"))
            #expect(bytes == Data(FixtureContent.bytes(count: 3 << 20, seed: 51)))
        }
    }
}
