import Fastpull
import Foundation
import Testing

/// The manual page and the shell completions, generated from the option table: every option is in
/// each, bash really completes with its script, and `man` renders the page.
@Suite("Manual page and completions")
struct ManAndCompletionTests {
    let folder: String

    init() throws {
        folder = try ScratchFolders.make("fastpull-man").path
    }

    /// Long option names from `--help`, which lists every option of the table.
    func helpOptions() async throws -> [String] {
        let help = try await CLIRunner.run(["--help"], in: folder)
        let pattern = /--([a-z][a-z0-9-]+)/
        return Array(Set(help.stdout.matches(of: pattern).map { String($0.output.1) })).sorted()
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func everyOptionIsInTheCompletions(shell: String) async throws {
        let result = try await CLIRunner.run(["--completions", shell], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        for long in try await helpOptions() {
            #expect(
                result.stdout.contains(shell == "fish" ? "-l \(long)" : "--\(long)"), "\(long) in \(shell)")
        }
    }

    /// bash, given the script, completes `fastpull --out` to `--output` and a path after `-o`.
    @Test func bashCompletesWithTheScript() async throws {
        let script = folder + "/fastpull.bash"
        let generated = try await CLIRunner.run(["--completions", "bash"], in: folder)
        try Data(generated.stdout.utf8).write(to: URL(fileURLWithPath: script))
        _ = FileManager.default.createFile(atPath: folder + "/picked.txt", contents: Data())
        let result = try await CLIRunner.shell(
            "bash -n '\(script)' && bash -c 'source \"\(script)\"; COMP_WORDS=(fastpull --out); COMP_CWORD=1; "
                + "_fastpull; echo \"${COMPREPLY[*]}\"; COMP_WORDS=(fastpull -o pick); COMP_CWORD=2; _fastpull; "
                + "echo \"${COMPREPLY[*]}\"'",
            in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "--output", "\(result.stdout)")
        #expect(lines.last == "picked.txt", "\(result.stdout)")
    }

    @Test func theManualPageHasEveryOptionAndRenders() async throws {
        let page = try await CLIRunner.run(["--man"], in: folder)
        #expect(page.status == 0)
        try Data(page.stdout.utf8).write(to: URL(fileURLWithPath: folder + "/fastpull.1"))
        for long in try await helpOptions() {
            // roff writes every hyphen as \-.
            #expect(
                page.stdout.contains("\\-\\-" + long.replacingOccurrences(of: "-", with: "\\-")), "\(long)")
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/man") else { return }
        let rendered = try await CLIRunner.shell("MANWIDTH=100 man -l fastpull.1 2>&1", in: folder)
        #expect(rendered.status == 0, "\(rendered.stdout)")
        #expect(rendered.stdout.contains("EXIT STATUS"), "\(rendered.stdout)")
        #expect(rendered.stdout.contains("--connections"), "\(rendered.stdout)")
    }

    @Test func anUnknownShellIsAUsageError() async throws {
        let result = try await CLIRunner.run(["--completions", "tcsh"], in: folder)
        #expect(result.status == 2)
        #expect(result.stderr.contains("--completions: expected one of bash, zsh, fish, got 'tcsh'"))
    }
}
