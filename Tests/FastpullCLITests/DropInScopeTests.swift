import FastpullFixtures
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A drop-in keeps aria2's scoping: started as `aria2c` without `--list`, its list lives in its
/// download folder (or beside its `--save-session` file), so two daemons on two ports with two folders
/// never see each other's items and a fresh one starts empty; aria2's configuration file is read, the
/// command line winning. And `fastpull ls --watch` redraws the list until stopped.
extension DaemonCLITests {
    @Test func twoDropInsWithTwoFoldersShareNothing() async throws {
        let link = folder.appendingPathComponent("aria2c")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: CLIRunner.fastpull)
        let first = folder.appendingPathComponent("one")
        let second = folder.appendingPathComponent("two")
        for place in [first, second] {
            try FileManager.default.createDirectory(at: place, withIntermediateDirectories: true)
        }
        let configuration = folder.appendingPathComponent("aria2.conf")
        try "# aria2's own\nmax-concurrent-downloads=3\nrpc-secret=from-conf\n".write(
            to: configuration, atomically: true, encoding: .utf8)
        let a = try await start(
            ["--enable-rpc", "--dir=\(first.path)", "--conf-path=\(configuration.path)", "--rpc-secret=cli"],
            executable: link)
        let b = try await start(["--enable-rpc", "--dir=\(second.path)", "--no-conf"], executable: link)
        // The configuration file's options apply; the command line's secret wins over the file's.
        let options = try await call(a.port, "aria2.getGlobalOption", token: "cli")
        #expect(
            (options["result"] as? [String: Any])?["max-concurrent-downloads"] as? String == "3", "\(options)"
        )
        #expect(a.greeting.contains("list \(first.path)/.fastpull-downloads.sqlite"), "\(a.greeting)")
        #expect(b.greeting.contains("no RPC secret"), "\(b.greeting)")
        let added = try await call(
            a.port, "aria2.addUri", #"[["http://127.0.0.1:9/x"], {"pause": "true"}]"#, token: "cli")
        #expect(added["result"] is String, "\(added)")
        let theirs = try await call(b.port, "aria2.tellWaiting", "[0, 10]")
        #expect(
            (theirs["result"] as? [Any])?.isEmpty == true,
            "the second daemon sees the first one's item: \(theirs)")
        for running in [a, b] {
            kill(running.process.processIdentifier, SIGTERM)
            #expect(await CLIRunner.finish(running.process, running.out, running.err).status == 0)
        }
        #expect(FileManager.default.fileExists(atPath: first.path + "/.fastpull-downloads.sqlite"))
        #expect(FileManager.default.fileExists(atPath: second.path + "/.fastpull-downloads.sqlite"))
    }

    @Test func lsWatchRedrawsTheList() async throws {
        let daemon = try await start(["daemon", "--list", folder.appendingPathComponent("list.sqlite").path])
        let (process, out, err) = try CLIRunner.start(
            [
                "ls", "--watch", "--rpc-port", String(daemon.port), "--rpc-secret-file",
                folder.path + "/rpc-secret",
            ],
            in: folder.path)
        // Two tables, a second apart: the header twice.
        let text = await CLIRunner.offPool { () -> String in
            var bytes = Data()
            while String(decoding: bytes, as: UTF8.self).components(separatedBy: "GID ").count < 3 {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                bytes += chunk
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        process.interrupt()
        _ = await CLIRunner.finish(process, out, err)
        #expect(text.components(separatedBy: "GID ").count >= 3, "\(text)")
        _ = try await call(daemon.port, "aria2.shutdown", token: try secret())
        _ = await CLIRunner.finish(daemon.process, daemon.out, daemon.err)
    }
}
