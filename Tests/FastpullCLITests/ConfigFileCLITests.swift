import FastpullFixtures
import Foundation
import Testing

/// `~/.config/fastpull/config` (or `$XDG_CONFIG_HOME`'s), `-K FILE` and `--no-config`: the file's
/// options come first, the command line's win.
@Suite("fastpull configuration file")
struct ConfigFileCLITests {
    @Test func theFilesOptionsApplyAndTheCommandLineWins() async throws {
        let server = try FixtureServer()
        let folder = try ScratchFolders.make("fastpull-config").path
        let home = folder + "/home"
        try FileManager.default.createDirectory(
            atPath: home + "/.config/fastpull", withIntermediateDirectories: true)
        try "# mine\ndir = from-config\nretry = 2\n".write(
            toFile: home + "/.config/fastpull/config", atomically: true, encoding: .utf8)
        try "output-dir = from-k\n".write(toFile: folder + "/other.conf", atomically: true, encoding: .utf8)
        let url = server.url("/gen/2000?seed=101").absoluteString
        let environment = ["HOME": home, "XDG_CONFIG_HOME": ""]
        func saved(_ path: String) -> Bool { FileManager.default.fileExists(atPath: folder + "/" + path) }

        let configured = try await CLIRunner.run([url], in: folder, environment: environment)
        #expect(configured.status == 0, "\(configured.stderr)")
        #expect(saved("from-config/2000"))
        let overridden = try await CLIRunner.run(
            [url, "-d", "from-line"], in: folder, environment: environment)
        #expect(overridden.status == 0, "\(overridden.stderr)")
        #expect(saved("from-line/2000"))
        let chosen = try await CLIRunner.run([url, "-K", "other.conf"], in: folder, environment: environment)
        #expect(chosen.status == 0, "\(chosen.stderr)")
        #expect(saved("from-k/2000"))
        let none = try await CLIRunner.run([url, "--no-config"], in: folder, environment: environment)
        #expect(none.status == 0, "\(none.stderr)")
        #expect(saved("2000"))

        try "dir = x\nbogus = 1\n".write(
            toFile: home + "/.config/fastpull/config", atomically: true, encoding: .utf8)
        let bad = try await CLIRunner.run([url, "-o", "y"], in: folder, environment: environment)
        #expect(bad.status == 2)
        #expect(
            bad.stderr.contains("error: \(home)/.config/fastpull/config:2: unknown option '--bogus'"),
            "\(bad.stderr)")
    }
}
