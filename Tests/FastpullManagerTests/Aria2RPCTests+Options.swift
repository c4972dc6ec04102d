import FastpullFixtures
import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullManager

/// Options, places, sessions and the other methods a front-end calls beyond add and watch.
extension Aria2RPCTests {
    /// A call's `dir` and `out` must stay inside the download folder: `..`, an absolute folder
    /// elsewhere, and a link inside that points outside are refused, and nothing is added.
    @Test func outputsStayInsideTheDownloadFolder() async throws {
        let outside = FileManager.default.temporaryDirectory.appendingPathComponent(
            "fastpull-out-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: outside) }
        try FileManager.default.createSymbolicLink(
            at: folder.appendingPathComponent("escape"), withDestinationURL: outside)
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try await withDaemon {
            let url = server.url("/gen/1024?seed=1").absoluteString
            for options in [
                #"{"dir": "\#(outside.path)"}"#, #"{"dir": "sub/../.."}"#, #"{"dir": "escape"}"#,
                #"{"out": "escape/authorized_keys"}"#,
            ] {
                let answer = try await call("aria2.addUri", #"[["\#(url)"], \#(options)]"#)
                #expect(answer?["error"]?["code"]?.integer == 1, "\(options) was accepted")
                #expect(
                    answer?["error"]?["message"]?.string?.contains("outside the download folder") == true,
                    "\(options): \(answer?["error"]?["message"]?.string ?? "")")
            }
            // A name is plain parts: `..` would be resolved by the kernel after the link `escape`
            // (past any check of the text), and a NUL would cut the path short in C.
            for out in ["../x.bin", "/etc/x", "escape/../../x", "sub/./x", ".hidden", ""] {
                let answer = try await call("aria2.addUri", #"[["\#(url)"], {"out": "\#(out)"}]"#)
                #expect(
                    answer?["error"]?["message"]?.string?.contains("relative file name") == true,
                    "\(out): \(String(describing: answer))")
            }
            // A control character in any option's value is refused before anything else (the session
            // file keeps one option a line: a `\r` in a `referer` became a download of its own when
            // the session was read back).
            for options in [#"{"out": "a\u0000b"}"#, #"{"referer": "x\rhttp://127.0.0.1/injected"}"#] {
                let answer = try await call("aria2.addUri", #"[["\#(url)"], \#(options)]"#)
                #expect(
                    answer?["error"]?["message"]?.string?.contains("control character") == true,
                    "\(options): \(String(describing: answer))")
            }
            #expect(try daemon.queue.list.downloads().isEmpty)
            // Inside is fine: a relative folder, a name with a folder in it.
            let inside = try await call("aria2.addUri", #"[["\#(url)"], {"dir": "sub", "out": "a/b.bin"}]"#)
            let gid = try #require(inside?["result"]?.string, "\(String(describing: inside))")
            #expect(
                try daemon.queue.list.download(gid)?.directory == folder.appendingPathComponent("sub").path)
            // changeOption is held to the same rule.
            let paused = try await call("aria2.addUri", #"[["\#(url)"], {"pause": "true"}]"#)
            let second = try #require(paused?["result"]?.string)
            let moved = try await call("aria2.changeOption", #"["\#(second)", {"dir": "\#(outside.path)"}]"#)
            #expect(moved?["error"]?["code"]?.integer == 1)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty)
    }

    /// The folder rule holds when an item starts, not only when it is added: a folder it names that
    /// did not exist then, made since as a link out of the download folder, fails the item and
    /// nothing is written outside.
    @Test func aLinkMadeAfterAnItemWasAddedIsCheckedWhenItStarts() async throws {
        let outside = FileManager.default.temporaryDirectory.appendingPathComponent(
            "fastpull-later-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: outside) }
        try await withDaemon {
            let url = server.url("/gen/1024?seed=1").absoluteString
            let added = try await call(
                "aria2.addUri", #"[["\#(url)"], {"out": "later/f.bin", "pause": "true"}]"#)
            let gid = try #require(added?["result"]?.string, "\(String(describing: added))")
            try FileManager.default.createSymbolicLink(
                at: folder.appendingPathComponent("later"), withDestinationURL: outside)
            _ = try await call("aria2.unpause", #"["\#(gid)"]"#)
            #expect(
                try await waitFor {
                    [.error, .complete].contains(try self.daemon.queue.list.download(gid)?.status)
                })
            let item = try #require(try daemon.queue.list.download(gid))
            #expect(item.status == .error)
            #expect(item.errorMessage?.contains("outside the download folder") == true, "\(item)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty)
    }

    /// aria2's `gid` and `pause` options: the item gets the GID asked for (a malformed or used one is
    /// refused) and waits paused; changeOption on it is kept and shown by getOption, speeds in bytes.
    @Test func gidPauseAndOptions() async throws {
        try await withDaemon {
            let url = server.url("/gen/\(1 << 20)?seed=2").absoluteString
            let added = try await call(
                "aria2.addUri",
                #"[["\#(url)"], {"gid": "00000000000000AB", "pause": "true", "out": "p.bin"}]"#)
            #expect(added?["result"]?.string == "00000000000000ab")
            #expect(try daemon.queue.list.download("00000000000000ab")?.status == .paused)
            let again = try await call("aria2.addUri", #"[["\#(url)"], {"gid": "00000000000000ab"}]"#)
            #expect(again?["error"]?["message"]?.string?.contains("already in use") == true)
            let bad = try await call("aria2.addUri", #"[["\#(url)"], {"gid": "xyz"}]"#)
            #expect(bad?["error"]?["message"]?.string?.contains("16 hexadecimal digits") == true)
            #expect(
                try await call("aria2.changeOption", #"["00000000000000ab", {"max-download-limit": "2M"}]"#)?[
                    "result"]?.string == "OK")
            let options = try #require(try await call("aria2.getOption", #"["00000000000000ab"]"#)?["result"])
            #expect(options["max-download-limit"]?.string == String(2 << 20))
            #expect(options["out"]?.string == "p.bin")
            #expect(options["dir"]?.string == folder.path)
            let malformed = try await call(
                "aria2.changeOption", #"["00000000000000ab", {"max-download-limit": "fast"}]"#)
            #expect(malformed?["error"]?["code"]?.integer == 1)
            let uris = try await call("aria2.getUris", #"["00000000000000ab"]"#)?["result"]?.array
            #expect(uris?.first?["uri"]?.string == url)
            #expect(uris?.first?["status"]?.string == "waiting")
        }
    }

    /// `changeGlobalOption` sets how many run at once, for the queue there and then, and the overall
    /// speed limit of the client every download runs on.
    @Test func globalOptions() async throws {
        try await withDaemon(maximumActive: 3) {
            #expect(
                try await call("aria2.changeGlobalOption", #"[{"max-overall-download-limit": "3M"}]"#)?[
                    "result"]?
                    .string == "OK")
            #expect(daemon.queue.overallLimit == 3 << 20)
            #expect(
                try await call("aria2.getGlobalOption")?["result"]?["max-overall-download-limit"]?.string
                    == String(3 << 20))
            _ = try await call("aria2.changeGlobalOption", #"[{"max-overall-download-limit": "0"}]"#)
            #expect(daemon.queue.overallLimit == nil)
            let malformed = try await call(
                "aria2.changeGlobalOption", #"[{"max-overall-download-limit": "lots"}]"#)
            #expect(malformed?["error"]?["code"]?.integer == 1)
            #expect(
                try await call("aria2.getGlobalOption")?["result"]?["max-concurrent-downloads"]?.string == "3"
            )
            #expect(
                try await call("aria2.changeGlobalOption", #"[{"max-concurrent-downloads": "1"}]"#)?[
                    "result"]?
                    .string == "OK")
            #expect(daemon.queue.maximumActive == 1)
            let refused = try await call("aria2.changeGlobalOption", #"[{"max-concurrent-downloads": "0"}]"#)
            #expect(refused?["error"]?["code"]?.integer == 1)
            #expect(daemon.queue.maximumActive == 1)
        }
    }

    /// An active item whose options change starts again with them, from its journal: it ends
    /// complete with the right bytes, not in error.
    @Test func changingAnActiveItemRestartsIt() async throws {
        try await withDaemon {
            let url = server.url("/gen/\(8 << 20)?seed=3&rate=2000000").absoluteString
            let gid = try #require(
                try await call("aria2.addUri", #"[["\#(url)"], {"out": "c.bin"}]"#)?["result"]?.string)
            #expect(try await waitFor { self.daemon.queue.live(gid)?.completedLength ?? 0 > 0 })
            #expect(
                try await call("aria2.changeOption", #"["\#(gid)", {"max-download-limit": "50M"}]"#)?[
                    "result"]?
                    .string == "OK")
            #expect(try await waitFor { try self.daemon.queue.list.download(gid)?.status == .complete })
            #expect(
                try Data(contentsOf: folder.appendingPathComponent("c.bin"))
                    == Data(FixtureContent.bytes(count: 8 << 20, seed: 3)))
            let moving = try await call("aria2.changeOption", #"["\#(gid)", {"out": "d.bin"}]"#)
            #expect(moving?["error"]?["code"]?.integer == 1, "a finished item's options are history")
        }
    }

    /// The session: saveSession writes aria2's format (GID, folder, name, pause); a daemon started
    /// with it adds what it lists once, and a second start adds nothing twice.
    @Test func sessionsAreAria2s() async throws {
        let session = folder.appendingPathComponent("session.txt").path
        let url = server.url("/gen/1024?seed=4").absoluteString
        try await withDaemon(sessionPath: session) {
            _ = try await call(
                "aria2.addUri",
                #"[["\#(url)", "\#(url)&mirror=1"], {"gid": "00000000000000c1", "pause": "true", "out": "s.bin", "header": ["X-A: 1", "X-B: 2"]}]"#
            )
            #expect(try await call("aria2.saveSession")?["result"]?.string == "OK")
        }
        let text = try String(contentsOfFile: session, encoding: .utf8)
        #expect(text.hasPrefix("\(url)\t\(url)&mirror=1\n"), "\(text)")
        for line in [
            " gid=00000000000000c1", " out=s.bin", " pause=true", " dir=\(folder.path)", " header=X-A: 1",
            " header=X-B: 2",
        ] {
            #expect(text.contains(line + "\n"), "\(line) missing from \(text)")
        }
        let entries = SessionFile.entries(text)
        #expect(entries.count == 1)
        #expect(entries.first?.options["header"] == "X-A: 1\nX-B: 2")
        // A fresh list started from the session has the item, paused, with its GID; a restart adds it once.
        try FileManager.default.removeItem(atPath: folder.appendingPathComponent("list.sqlite").path)
        for _ in 0..<2 {
            try await withDaemon(sessionPath: session) {
                let items = try daemon.queue.list.downloads()
                #expect(items.map(\.gid) == ["00000000000000c1"])
                #expect(items.first?.status == .paused)
                #expect(items.first?.uris.count == 2)
            }
        }
        // Without a session file, saveSession says what to do.
        try await withDaemon {
            let refused = try await call("aria2.saveSession")
            #expect(refused?["error"]?["message"]?.string?.contains("--save-session") == true)
        }
    }

    /// With a save interval, the session is written while the daemon runs, not only at its end.
    @Test func theSessionIsSavedEveryInterval() async throws {
        let session = folder.appendingPathComponent("interval.txt").path
        try await withDaemon(sessionPath: session, sessionInterval: 1) {
            let url = server.url("/gen/1024?seed=9").absoluteString
            _ = try await call(
                "aria2.addUri", #"[["\#(url)"], {"gid": "00000000000000d1", "pause": "true"}]"#)
            #expect(
                try await waitFor {
                    (try? String(contentsOfFile: session, encoding: .utf8))?.contains(" gid=00000000000000d1")
                        == true
                })
        }
    }

    /// An input file's entry without a GID gets one made from what it asks for: started twice, the
    /// daemon adds it once. An entry the daemon refuses (outside the folder) is skipped with why.
    @Test func anInputFileIsAddedOnce() async throws {
        let input = folder.appendingPathComponent("input.txt").path
        let url = server.url("/gen/1024?seed=7").absoluteString
        try "\(url)\n out=i.bin\n pause=true\nhttp://127.0.0.1:1/x\n dir=/etc\n".write(
            toFile: input, atomically: true, encoding: .utf8)
        for _ in 0..<2 {
            try await withDaemon(inputPath: input) {
                let names = try daemon.queue.list.downloads().map(\.outputName)
                #expect(names == ["i.bin"])
                #expect(daemon.skippedAtStart.count == 1)
                #expect(daemon.skippedAtStart.first?.contains("outside the download folder") == true)
            }
        }
    }

    /// What a caller could use to take the daemon down or guess its secret is cut: a batch or a
    /// multicall of more than 1,000 calls; a position or a speed beyond any number; and once one
    /// call of a request gives a wrong secret, the later ones are refused without a look.
    @Test func whatCouldTakeTheDaemonDownIsCut() async throws {
        try await withDaemon(secret: "s") {
            let many =
                "["
                + Array(repeating: #"{"jsonrpc":"2.0","id":1,"method":"system.listMethods"}"#, count: 1001)
                .joined(separator: ",") + "]"
            let batch = try await post(many)
            #expect(batch.answer?["error"]?["code"]?.integer == -32600, "\(String(describing: batch.answer))")
            let calls = Array(repeating: #"{"methodName":"system.listMethods","params":[]}"#, count: 1001)
                .joined(separator: ",")
            let multicall = try await call("system.multicall", "[[\(calls)]]")
            #expect(multicall?["error"]?["message"]?.string?.contains("at most 1000") == true)
            // Guesses in one batch: after the first wrong one, even the right secret is refused.
            let guesses = try await post(
                #"[{"jsonrpc":"2.0","id":1,"method":"aria2.getVersion","params":["token:a"]},"#
                    + #"{"jsonrpc":"2.0","id":2,"method":"aria2.getVersion","params":["token:s"]}]"#)
            #expect(
                guesses.answer?.array?.map { $0["error"]?["message"]?.string } == [
                    "Unauthorized", "Unauthorized",
                ])
            let right = try await call("aria2.getVersion", #"["token:s"]"#)
            #expect(right?["result"]?["version"]?.string == "1.36.0", "a new request is looked at afresh")
            let url = server.url("/gen/1024?seed=8").absoluteString
            let gid = try #require(
                try await call("aria2.addUri", #"["token:s", ["\#(url)"], {"pause": "true"}]"#)?["result"]?
                    .string)
            let far = try await call(
                "aria2.changePosition", #"["token:s", "\#(gid)", "9223372036854775807", "POS_CUR"]"#)
            #expect(far?["result"]?.integer == 0)
            let huge = try await call(
                "aria2.changeOption", #"["token:s", "\#(gid)", {"max-download-limit": "9007199254740992K"}]"#)
            #expect(huge?["error"]?["code"]?.integer == 1)
        }
    }

    /// tellStopped lists items in the order they stopped, not the order they were added.
    @Test func stoppedInTheOrderTheyStopped() async throws {
        try await withDaemon {
            let url = server.url("/gen/1024?seed=5").absoluteString
            var gids: [String] = []
            for name in ["a", "b"] {
                let answer = try await call(
                    "aria2.addUri", #"[["\#(url)"], {"out": "\#(name).bin", "pause": "true"}]"#)
                gids.append(try #require(answer?["result"]?.string))
            }
            _ = try await call("aria2.remove", #"["\#(gids[1])"]"#)
            _ = try await call("aria2.remove", #"["\#(gids[0])"]"#)
            let stopped = try await call("aria2.tellStopped", #"[0, 10, ["gid"]]"#)?["result"]?.array
            #expect(stopped?.compactMap { $0["gid"]?.string } == [gids[1], gids[0]])
            // Pages: from an offset, and from the end backwards (aria2's negative offset).
            let second = try await call("aria2.tellStopped", #"[1, 5, ["gid"]]"#)?["result"]?.array
            #expect(second?.compactMap { $0["gid"]?.string } == [gids[0]])
            let fromEnd = try await call("aria2.tellStopped", #"[-1, 2, ["gid"]]"#)?["result"]?.array
            #expect(fromEnd?.compactMap { $0["gid"]?.string } == [gids[0], gids[1]])
            let beyond = try await call("aria2.tellStopped", #"[-3, 2, ["gid"]]"#)?["result"]?.array
            #expect(beyond?.isEmpty == true)
        }
    }

    /// `addMetalink`: one item per file, its URLs as mirrors, its hash as the checksum.
    @Test func metalinkAddsEachFile() async throws {
        try await withDaemon {
            let first = server.url("/gen/4096?seed=6").absoluteString
            let data = FixtureContent.bytes(count: 4096, seed: 6)
            let digest = SHA256Digest.of(Data(data)).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }
                .joined()
            let document = """
                <?xml version="1.0" encoding="UTF-8"?>
                <metalink xmlns="urn:ietf:params:xml:ns:metalink">
                  <file name="m.bin"><size>4096</size><hash type="sha-256">\(digest)</hash>
                    <url priority="1">\(first)</url><url priority="2">\(first)&amp;mirror=2</url></file>
                </metalink>
                """
            let encoded = Data(document.utf8).base64EncodedString()
            let answer = try await call("aria2.addMetalink", #"["\#(encoded)"]"#)
            let gid = try #require(answer?["result"]?.array?.first?.string, "\(String(describing: answer))")
            let item = try #require(try daemon.queue.list.download(gid))
            #expect(item.uris.count == 2)
            #expect(item.options["checksum"] == "sha256=\(digest)")
            #expect(try await waitFor { try self.daemon.queue.list.download(gid)?.status == .complete })
            #expect(try Data(contentsOf: folder.appendingPathComponent("m.bin")) == Data(data))
        }
    }

    /// XML-RPC's own errors: a body that is not XML, a document type (entity expansion), an unknown
    /// value type — each a fault, never a crash, and the daemon answers the next call.
    @Test func malformedXMLIsAFault() {
        let rpc = Aria2RPC(
            queue: DownloadQueue(
                list: try! DownloadList(path: folder.appendingPathComponent("x.sqlite").path)),
            secret: nil, folder: DownloadFolder(folder.path))
        for body in [
            "not xml", #"<?xml version="1.0"?><!DOCTYPE a [<!ENTITY b "c">]><methodCall/>"#,
            "<methodCall><methodName>aria2.getVersion</methodName><params><param><value><float>1</float></value></param></params></methodCall>",
            "<methodCall></methodCall>",
        ] {
            let answer = String(decoding: rpc.answer(xml: Array(body.utf8)), as: UTF8.self)
            #expect(answer.contains("<fault>") && answer.contains("-32700"), "\(body): \(answer)")
        }
        let version = String(
            decoding: rpc.answer(
                xml: Array(
                    "<methodCall><methodName>aria2.getVersion</methodName><params/></methodCall>".utf8)),
            as: UTF8.self)
        #expect(version.contains("<name>version</name><value><string>1.36.0</string>"), "\(version)")
        let escaped = XMLRPC.encode(.string("a<b&c"))
        #expect(escaped == "<value><string>a&lt;b&amp;c</string></value>")
    }
}

/// aria2's per-download options turned into a configuration.
struct ItemOptionsTests {
    @Test func connectionCeilingsAndSpeeds() throws {
        let configuration = try ItemOptions.configuration([
            "split": "4", "max-connection-per-server": "2", "max-download-limit": "500K",
        ])
        #expect(configuration.connections.maximum == 4)
        #expect(configuration.connections.maximumPerHost == 2)
        #expect(configuration.connections.maximumBytesPerSecond == 500 << 10)
        #expect(!configuration.resume.keepsServerTime)
        let timed = try ItemOptions.configuration(["remote-time": "true"])
        #expect(timed.resume.keepsServerTime)
        #expect(try ItemOptions.configuration([:]).connections.maximum == Configuration().connections.maximum)
        for bad in [["split": "0"], ["max-connection-per-server": "many"], ["max-download-limit": "-1"]] {
            #expect(throws: FastpullError.self, "\(bad)") { try ItemOptions.configuration(bad) }
        }
    }
}
