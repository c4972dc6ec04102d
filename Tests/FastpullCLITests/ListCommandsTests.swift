import FastpullFixtures
import Foundation
import Testing

/// `fastpull add`, `ls`, `pause`, `resume` and `rm` against a running `fastpull daemon`: GIDs printed,
/// the list as a table and as JSON, GID prefixes, and the errors for a GID that names nothing, a
/// daemon that is not there and a wrong secret, each with its exit code.
extension DaemonCLITests {
    @Test func listCommandsDriveTheDaemon() async throws {
        let server = try FixtureServer()
        let list = folder.appendingPathComponent("list.sqlite").path
        let daemon = try await start(["daemon", "--list", list, "--dir", folder.path])
        let port = String(daemon.port)
        let secretFile = folder.appendingPathComponent("rpc-secret").path
        func fastpull(_ arguments: [String], environment: [String: String] = [:]) async throws
            -> CLIRunner.Result
        {
            try await CLIRunner.run(
                arguments + ["--rpc-port", port, "--rpc-secret-file", secretFile], in: folder.path,
                environment: environment)
        }
        let quick = server.url("/gen/\(1 << 20)?seed=61").absoluteString
        let held = server.url("/gen/\(1 << 20)?seed=62").absoluteString
        let added = try await fastpull(["add", quick, "-o", "quick.bin"])
        #expect(added.status == 0, "\(added.stderr)")
        let quickGID = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(quickGID.count == 16, "\(added.stdout)")
        let paused = try await fastpull(["add", held, "-o", "held.bin", "--paused", "-d", "sub"])
        let heldGID = paused.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(
            try await waitFor {
                let json = try await fastpull(["ls", "--json"])
                return json.stdout.contains(#""status":"complete""#)
            })
        let table = try await fastpull(["ls"])
        #expect(table.status == 0)
        #expect(table.stdout.hasPrefix("GID "))
        #expect(table.stdout.contains("\(quickGID)  complete  100%    1.0 MiB"), "\(table.stdout)")
        #expect(table.stdout.contains("\(heldGID)  paused"), "\(table.stdout)")
        #expect(table.stdout.contains("held.bin"))
        // Resumed by a prefix of its GID, it completes into the folder asked for, relative to here.
        let resumed = try await fastpull(["resume", String(heldGID.prefix(6))])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stdout == "\(heldGID) waiting\n")
        #expect(
            try await waitFor {
                let json = try await fastpull(["ls", "--json"])
                return json.stdout.components(separatedBy: #""status":"complete""#).count == 3
            })
        #expect(
            try Data(contentsOf: folder.appendingPathComponent("sub/held.bin"))
                == Data(FixtureContent.bytes(count: 1 << 20, seed: 62)))
        // What cannot be done says why, with its code.
        let unknown = try await fastpull(["rm", "ffff0000"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("no download has GID ffff0000"))
        let finished = try await fastpull(["pause", quickGID])
        #expect(finished.status == 2)
        #expect(finished.stderr.contains("complete: it cannot pause"), "\(finished.stderr)")
        let badPort = try await CLIRunner.run(
            ["ls"], in: folder.path, environment: ["FASTPULL_RPC_PORT": "70000"])
        #expect(badPort.status == 2)
        #expect(badPort.stderr.contains("FASTPULL_RPC_PORT must be a port"))
        let noURL = try await fastpull(["add"])
        #expect(noURL.status == 2)
        #expect(noURL.stderr.contains("needs at least one URL"))
        let wrongSecret = try await CLIRunner.run(
            ["ls", "--rpc-port", port], in: folder.path, environment: ["FASTPULL_RPC_SECRET": "wrong"])
        #expect(wrongSecret.status == 1)
        #expect(wrongSecret.stderr.contains("refused the secret"))
        _ = try await call(daemon.port, "aria2.shutdown", token: try secret())
        _ = await CLIRunner.finish(daemon.process, daemon.out, daemon.err)
        let gone = try await fastpull(["ls"])
        #expect(gone.status == 3)
        #expect(gone.stderr.contains("no fastpull daemon answers on 127.0.0.1:\(port)"))
    }

    /// The secret the daemon made beside its list in the test's folder.
    func secret() throws -> String {
        try String(contentsOfFile: folder.appendingPathComponent("rpc-secret").path, encoding: .utf8)
            .trimmingCharacters(in: .newlines)
    }
}
