import Foundation
import Testing

/// Where a program is, if it is installed.
private func installed(_ name: String) -> String? {
    ["/usr/bin/", "/usr/local/bin/", "/bin/"].map { $0 + name }.first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
}

/// The completion scripts in the shells themselves, as a person pressing Tab meets them: zsh in a
/// tmux pane (its completion needs a line editor), fish through `complete -C`, bash through its
/// completion function.
@Suite("Shell completions in the shells")
struct CompletionShellTests {
    /// The script `fastpull --completions shell` prints, written to `folder/name`; its path.
    static func writeScript(_ shell: String, to folder: String, as name: String) async throws -> String {
        let result = try await CLIRunner.run(["--completions", shell], in: folder)
        #expect(result.status == 0)
        let path = folder + "/" + name
        try result.stdout.write(toFile: path, atomically: true, encoding: String.Encoding.utf8)
        return path
    }

    /// zsh: Tab after `fastpull --retry-conn` completes the option, and no spec of the script is
    /// refused (a bad one makes zsh print `_arguments:…: invalid … definition` at every Tab and
    /// complete nothing).
    @Test(.enabled(if: installed("zsh") != nil && installed("tmux") != nil, "zsh or tmux is not installed"))
    func zshCompletesAnOptionAtTab() async throws {
        let folder = try ScratchFolders.make("fastpull-zsh").path
        _ = try await Self.writeScript("zsh", to: folder, as: "_fastpull")
        let zshrc = [
            "fpath=('\(folder)' $fpath)", "autoload -U compinit", "compinit -u -d '\(folder)/.zcompdump'",
            "PS1='READY> '",
        ]
        try (zshrc.joined(separator: "\n") + "\n").write(
            toFile: folder + "/.zshrc", atomically: true, encoding: String.Encoding.utf8)
        let socket = "fastpull-zsh-\(UUID().uuidString)"
        defer { _ = ProgressTmuxTests.tmux(socket, ["kill-server"]) }
        let command = "ZDOTDIR='\(folder)' TERM=xterm '\(installed("zsh")!)' -i"
        _ = await CLIRunner.offPool {
            ProgressTmuxTests.startSession(
                socket, ["new-session", "-d", "-s", "fp", "-x", "160", "-y", "20", command])
        }
        let ready = await ProgressTmuxTests.capture(socket, seconds: 20) { lines in
            lines.contains { $0.hasPrefix("READY>") }
        }
        #expect(
            ready.contains { $0.hasPrefix("READY>") }, "zsh did not start:\n\(ready.joined(separator: "\n"))")
        for (typed, completed) in [("--retry-conn", "--retry-connrefused"), ("--limit-r", "--limit-rate")] {
            _ = ProgressTmuxTests.tmux(socket, ["send-keys", "-t", "fp", "C-u", "fastpull \(typed)", "Tab"])
            let lines = await ProgressTmuxTests.capture(socket, seconds: 20) { lines in
                lines.contains { $0.contains("fastpull \(completed)") }
            }
            let text = lines.joined(separator: "\n")
            #expect(text.contains("fastpull \(completed)"), "after Tab on \(typed):\n\(text)")
            #expect(!text.contains("_arguments"), "zsh refused the script:\n\(text)")
        }
    }

    /// fish: the completions of `fastpull --retry-conn` and of `fastpull --limit-r` name the options,
    /// each with its help.
    @Test(.enabled(if: installed("fish") != nil, "fish is not installed"))
    func fishCompletesAnOption() async throws {
        let folder = try ScratchFolders.make("fastpull-fish").path
        let script = try await Self.writeScript("fish", to: folder, as: "fastpull.fish")
        let lines = [
            "source '\(script)'", "complete -C 'fastpull --retry-conn'", "complete -C 'fastpull --limit-r'",
        ]
        try (lines.joined(separator: "\n") + "\n").write(
            toFile: folder + "/try.fish", atomically: true, encoding: String.Encoding.utf8)
        let result = try await CLIRunner.shell("'\(installed("fish")!)' --no-config try.fish", in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let completions = result.stdout.split(separator: "\n").map(String.init)
        #expect(completions.contains { $0.hasPrefix("--retry-connrefused\t") }, "\(result.stdout)")
        #expect(completions.contains { $0.hasPrefix("--limit-rate\t") }, "\(result.stdout)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
    }

    /// bash: the script's completion function completes an option.
    @Test(.enabled(if: installed("bash") != nil, "bash is not installed"))
    func bashCompletesAnOption() async throws {
        let folder = try ScratchFolders.make("fastpull-bash").path
        let script = try await Self.writeScript("bash", to: folder, as: "fastpull.bash")
        let lines = [
            "source '\(script)'", "COMP_WORDS=(fastpull --retry-conn)", "COMP_CWORD=1", "_fastpull",
            "printf '%s\\n' \"${COMPREPLY[@]}\"",
        ]
        try (lines.joined(separator: "\n") + "\n").write(
            toFile: folder + "/try.bash", atomically: true, encoding: String.Encoding.utf8)
        let result = try await CLIRunner.shell("'\(installed("bash")!)' try.bash", in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").map(String.init) == ["--retry-connrefused"])
    }
}
