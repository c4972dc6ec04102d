import FastpullFixtures
import Foundation
import Testing

@testable import FastpullCommandLine

/// `fastpull daemon` as a front-end and a user meet it: started, driven over aria2's JSON-RPC, killed
/// with `kill -9` mid-download and started again (the item resumes, nothing is lost), started as
/// `aria2c --enable-rpc`, and refusing what it does not know.
@Suite("fastpull daemon")
struct DaemonCLITests {
    let folder: URL

    init() throws {
        folder = try ScratchFolders.make("fastpull-daemon")
    }

    /// A daemon started with `arguments` (and `--rpc-listen-port 0`), once it has said its port.
    struct Running {
        let process: Process
        let port: Int
        let out: Pipe
        let err: Pipe
        /// What it printed first (its address, and the aria2 options it leaves alone).
        let greeting: String
    }

    func start(_ arguments: [String], executable: URL = CLIRunner.fastpull) async throws -> Running {
        let (process, out, err) = try CLIRunner.start(
            arguments + ["--rpc-listen-port", "0"], in: folder.path, executable: executable)
        let handle = out.fileHandleForReading
        // The first line says where it listens: `… http://127.0.0.1:PORT/jsonrpc, list …`; the
        // second, its web page and where its secret is.
        let line = await CLIRunner.offPool { () -> String in
            var bytes = Data()
            while bytes.count(where: { $0 == UInt8(ascii: "\n") }) < 2 {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                bytes += chunk
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        let port = line.components(separatedBy: "127.0.0.1:").dropFirst().first.flatMap {
            Int($0.prefix { $0.isNumber })
        }
        return Running(
            process: process, port: try #require(port, "first line: \(line)"), out: out, err: err,
            greeting: line)
    }

    /// Calls `method` with `params` (JSON text), `token` first when given; returns the parsed answer.
    func call(_ port: Int, _ method: String, _ params: String = "[]", token: String? = nil) async throws
        -> [String: Any]
    {
        var params = params
        if let token {
            params = #"["token:\#(token)""# + (params == "[]" ? "]" : "," + params.dropFirst())
        }
        let body = #"{"jsonrpc":"2.0","id":"t","method":"\#(method)","params":\#(params)}"#
        let response = try await LoopbackHTTPClient(port: port).send(
            .init(method: "POST", target: "/jsonrpc", body: Data(body.utf8)))
        return try JSONSerialization.jsonObject(with: response.body) as? [String: Any] ?? [:]
    }

    func status(_ port: Int, _ gid: String, token: String? = nil) async throws -> String? {
        let answer = try await call(port, "aria2.tellStatus", #"["\#(gid)", ["status"]]"#, token: token)
        return (answer["result"] as? [String: Any])?["status"] as? String
    }

    func waitFor(_ seconds: Double = 30, _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while try await !condition() {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// `kill -9` while a download runs; started again on the same list, the item is active again and
    /// resumes from its journal to the right bytes. `aria2.shutdown` then ends the daemon with 0. The
    /// secret made at the first start (a file only its user reads) is the one the second start uses.
    @Test func aKillLosesNothing() async throws {
        // 4 MB/s in all, however many connections the count reaches: the kill lands after the
        // journal's first checkpoint (about a second in), whatever the ramp did.
        var capped = FixtureServer.Configuration()
        capped.totalRate = 4_000_000
        let server = try FixtureServer(capped)
        let size = 16 << 20
        let list = folder.appendingPathComponent("list.sqlite").path
        let first = try await start(["daemon", "--list", list, "--dir", folder.path])
        let secretFile = folder.appendingPathComponent("rpc-secret").path
        #expect(first.greeting.contains("secret in \(secretFile)"), "\(first.greeting)")
        let mode = try FileManager.default.attributesOfItem(atPath: secretFile)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let secret = try String(contentsOfFile: secretFile, encoding: .utf8).trimmingCharacters(in: .newlines)
        #expect(secret.count >= 32)
        let refused = try await call(first.port, "aria2.getVersion")
        #expect((refused["error"] as? [String: Any])?["message"] as? String == "Unauthorized")
        let url = server.url("/gen/\(size)?seed=3").absoluteString
        let added = try await call(
            first.port, "aria2.addUri", #"[["\#(url)"], {"out": "big.bin"}]"#, token: secret)
        let gid = try #require(added["result"] as? String, "\(added)")
        #expect(try await waitFor { server.stats.bodyBytesSent > 6 << 20 })
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()
        #expect(first.process.terminationReason == .uncaughtSignal)
        let sentBefore = server.stats.bodyBytesSent

        let second = try await start(["daemon", "--list", list, "--dir", folder.path])
        #expect(try await waitFor { try await status(second.port, gid, token: secret) == "complete" })
        #expect(
            try Data(contentsOf: folder.appendingPathComponent("big.bin"))
                == Data(FixtureContent.bytes(count: size, seed: 3)))
        // Resumed: not fetched again from its start.
        #expect(server.stats.bodyBytesSent - sentBefore < Int64(size), "\(server.stats)")
        let shutdown = try await call(second.port, "aria2.shutdown", token: secret)
        #expect(shutdown["result"] as? String == "OK")
        let result = await CLIRunner.finish(second.process, second.out, second.err)
        #expect(result.status == 0, "\(result.stderr)")
    }

    /// Started under the name `aria2c` with aria2's daemon flags: the secret is required and is not in
    /// the process table; aria2's options it does not use are accepted.
    @Test func startedAsAria2c() async throws {
        let link = folder.appendingPathComponent("aria2c")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: CLIRunner.fastpull)
        let running = try await start(
            [
                "--enable-rpc", "--rpc-secret=hunter2", "--max-concurrent-downloads=2", "--save-session",
                folder.appendingPathComponent("session").path, "--continue", "--dir=\(folder.path)", "--list",
                folder.appendingPathComponent("list.sqlite").path,
            ], executable: link)
        let refused = try await call(running.port, "aria2.getVersion")
        #expect((refused["error"] as? [String: Any])?["message"] as? String == "Unauthorized")
        let version = try await call(running.port, "aria2.getVersion", #"["token:hunter2"]"#)
        #expect((version["result"] as? [String: Any])?["version"] as? String == "1.36.0")
        let commandLine = try String(
            contentsOfFile: "/proc/\(running.process.processIdentifier)/cmdline", encoding: .utf8)
        #expect(!commandLine.contains("hunter2"))
        _ = try await call(running.port, "aria2.shutdown", #"["token:hunter2"]"#)
        let result = await CLIRunner.finish(running.process, running.out, running.err)
        #expect(result.status == 0, "\(result.stderr)")
        #expect((running.greeting + result.stdout).contains("left alone: --continue"), "\(running.greeting)")
    }

    /// What it does not know is a usage error that names it (exit 2), as is a URL on its command line.
    @Test func unknownOptionsAndURLsAreUsageErrors() async throws {
        let unknown = try await CLIRunner.run(["daemon", "--frobnicate"], in: folder.path)
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("unknown option '--frobnicate' for fastpull daemon"))
        let url = try await CLIRunner.run(["daemon", "http://127.0.0.1:1/x"], in: folder.path)
        #expect(url.status == 2)
        #expect(url.stderr.contains("takes no URL"))
        let port = try await CLIRunner.run(["daemon", "--rpc-listen-port", "99999"], in: folder.path)
        #expect(port.status == 2)
        #expect(port.stderr.contains("expects a number in 0-65535"))
    }

    /// The parser on its own: how each spelling is read.
    @Test func theOptionsAria2cUsersType() throws {
        #expect(
            DaemonOptions.invocation(executable: "/usr/bin/fastpull", arguments: ["daemon", "-q"]) == ["-q"])
        #expect(
            DaemonOptions.invocation(executable: "/usr/local/bin/aria2c", arguments: ["-d", "x"]) == [
                "-d", "x",
            ])
        #expect(
            DaemonOptions.invocation(executable: "fastpull", arguments: ["--enable-rpc"]) == ["--enable-rpc"])
        #expect(DaemonOptions.invocation(executable: "fastpull", arguments: ["http://x/y"]) == nil)
        let options = try DaemonOptions(parsing: [
            "--rpc-listen-port=6801", "--rpc-listen-all", "--rpc-allow-origin-all=false", "-j", "3", "-d",
            "/srv",
            "--rpc-secret", "s", "--quiet", "--split=4",
        ])
        #expect(options.port == 6801 && options.listensOnAllInterfaces && !options.allowsAnyOrigin)
        #expect(
            options.maximumActive == 3 && options.directory == "/srv" && options.secret == "s"
                && options.quiet)
        #expect(options.ignored == ["split"])
        #expect(throws: UsageError.self) { try DaemonOptions(parsing: ["--rpc-listen-all=maybe"]) }
        // An aria2 option whose value is optional does not take the next option as its value.
        let kept = try DaemonOptions(parsing: ["--check-certificate", "--rpc-secret=S", "--log", "-", "-q"])
        #expect(kept.secret == "S" && kept.quiet && kept.ignored == ["check-certificate", "log"])
        #expect(
            DaemonOptions.secretSpans(in: ["--rpc-secret", "abc", "--rpc-secret=xyz"])
                == [.init(argument: 1, bytes: 0..<3), .init(argument: 2, bytes: 13..<16)])
        #expect(
            DaemonOptions.defaultListPath(environment: ["HOME": "/home/u"])
                == "/home/u/.local/share/fastpull/downloads.sqlite")
        #expect(
            DaemonOptions.defaultListPath(environment: ["XDG_DATA_HOME": "/d"])
                == "/d/fastpull/downloads.sqlite")
    }
}
