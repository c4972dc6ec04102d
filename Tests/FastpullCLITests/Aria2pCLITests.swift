import FastpullFixtures
import Foundation
import Testing

/// aria2p's command line against `fastpull daemon`, as an aria2 user types it: add, show, pause,
/// resume, remove, and `aria2p top` (its terminal interface) in a tmux pane, read as a person sees it.
extension DaemonCLITests {
    /// Runs `aria2p` with `arguments` against the daemon on `port`; returns its exit status and output.
    func aria2p(_ port: Int, _ secret: String, _ arguments: [String]) async -> (status: Int32, text: String) {
        await CLIRunner.offPool { () -> (Int32, String) in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["aria2p", "--port", String(port), "--secret", secret] + arguments
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            process.standardInput = FileHandle.nullDevice
            do { try process.run() } catch { return (-1, "cannot run aria2p: \(error)") }
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
    }

    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux"), "tmux is not installed"))
    func aria2pCommandsAndTop() async throws {
        var settings = FixtureServer.Configuration()
        settings.totalRate = 1_000_000
        let server = try FixtureServer(settings)
        let daemon = try await start([
            "daemon", "--list", folder.appendingPathComponent("list.sqlite").path, "--dir", folder.path,
        ])
        let secret = try secret()
        let url = server.url("/gen/\(12 << 20)?seed=91").absoluteString
        let added = await aria2p(daemon.port, secret, ["add", url])
        #expect(added.status == 0, "\(added.text)")
        let gid = try #require(added.text.split(separator: " ").last.map { String($0.prefix(16)) })
        #expect(
            try await waitFor { await aria2p(daemon.port, secret, ["show"]).text.contains("\(gid)  active") })
        let paused = await aria2p(daemon.port, secret, ["pause", gid])
        #expect(paused.status == 0, "\(paused.text)")
        let shown = await aria2p(daemon.port, secret, ["show"]).text
        #expect(shown.contains("\(gid)  paused"), "\(shown)")
        // Paused, the row keeps how far it got.
        #expect(!shown.contains("0.00%"), "\(shown)")
        #expect(await aria2p(daemon.port, secret, ["resume", gid]).status == 0)

        // `aria2p top` in a pane of 120 × 12, as a person sees it: the item, active, with its name.
        let socket = "fastpull-aria2p-\(UUID().uuidString.prefix(8))"
        let command = "aria2p --port \(daemon.port) --secret \(secret) top"
        #expect(
            ProgressTmuxTests.startSession(socket, ["new-session", "-d", "-x", "120", "-y", "12", command])
                == 0)
        defer { _ = ProgressTmuxTests.tmux(socket, ["kill-server"]) }
        var screen = ""
        #expect(
            try await waitFor {
                screen = ProgressTmuxTests.tmux(socket, ["capture-pane", "-p"], capture: true)
                return screen.contains("\(gid) active") && screen.contains("12.00 MiB")
            }, "\(screen)")
        #expect(screen.contains("GID STATUS"), "\(screen)")
        _ = ProgressTmuxTests.tmux(socket, ["send-keys", "q"])

        let removed = await aria2p(daemon.port, secret, ["remove", gid])
        #expect(removed.status == 0, "\(removed.text)")
        #expect(!(await aria2p(daemon.port, secret, ["show"]).text.contains(gid)))
        _ = try await call(daemon.port, "aria2.shutdown", token: secret)
        let result = await CLIRunner.finish(daemon.process, daemon.out, daemon.err)
        #expect(result.status == 0, "\(result.stderr)")
    }
}
