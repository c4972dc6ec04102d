import FastpullFixtures
import Foundation
import Testing

/// `--on-download-complete` and `--on-download-error`: a command for each file as it ends, with
/// aria2's three arguments and `FASTPULL_*` variables; its output never mixes into fastpull's own.
@Suite("fastpull --on-download-complete, --on-download-error")
struct HookCLITests {
    func lines(_ path: String) -> [String] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init).sorted()
    }

    @Test func eachFileRunsItsHookWithTheArgumentsAndVariables() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-hooks")
        let folder = workspace.folder
        let good = workspace.server.url("/gen/70000?seed=61").absoluteString
        let missing = workspace.server.url("/gen/1?status=404").absoluteString
        // The size the hook reads from the file itself: the file is in place when it runs.
        let complete =
            #"printf '%s|%s|%s|%s|%s|%s|%s\n' "$1" "$2" "$3" "$FASTPULL_STATUS" "$FASTPULL_URL" "$FASTPULL_SIZE" "$(wc -c < "$3")" >> complete.log"#
        let failed =
            #"printf '%s|%s|%s|%s\n' "$FASTPULL_INDEX" "$FASTPULL_EXIT_CODE" "$3" "$FASTPULL_ERROR" >> failed.log"#
        let result = try await CLIRunner.run(
            [
                good, missing, "-d", "out", "--on-download-complete", complete, "--on-download-error", failed,
            ], in: folder)
        #expect(result.status == 4, "\(result.stderr)")
        let path = folder + "/out/70000"
        #expect(
            lines(folder + "/complete.log")
                == ["0000000000000001|1|\(path)|downloaded|\(good)|70000|70000"])
        let failures = lines(folder + "/failed.log")
        #expect(failures.count == 1)
        #expect(failures.first?.hasPrefix("2|4|") == true, "\(failures)")
        #expect(failures.first?.contains("HTTP 404") == true, "\(failures)")

        // A rerun finds the file complete: the hook runs, and says so.
        let rerun = try await CLIRunner.run(
            [good, "-d", "out", "--on-download-complete", complete], in: folder)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(lines(folder + "/complete.log").contains { $0.contains("|already-complete|") })
    }

    @Test func aProgramGetsAria2sArgumentsAndItsOutputGoesToStandardError() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-hook-program")
        let folder = workspace.folder
        let script = folder + "/hook.sh"
        try "#!/bin/sh\necho \"hook output $2\"\necho \"$1 $3\" > \"$3.done\"\n".write(
            toFile: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
        let url = workspace.server.url("/gen/5000?seed=62").absoluteString
        let result = try await CLIRunner.run(
            [url, "-o", "x.bin", "--json", "--on-download-complete", "./hook.sh"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let done = try String(contentsOfFile: folder + "/x.bin.done", encoding: .utf8)
        #expect(done == "0000000000000001 \(folder)/x.bin\n")
        // stdout is --json's alone; the hook's output went to stderr.
        for line in result.stdout.split(separator: "\n") {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "\(line)")
        }
        #expect(result.stderr.contains("hook output 1"), "\(result.stderr)")
    }

    @Test func aFailingHookIsAWarningAndTheExitCodeStaysTheFiles() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-hook-fails")
        let url = workspace.server.url("/gen/3000?seed=63").absoluteString
        let result = try await CLIRunner.run(
            [url, "-o", "x.bin", "--on-download-complete", "exit 3", "--on-download-error", "touch no"],
            in: workspace.folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "warning: --on-download-complete for \(workspace.folder)/x.bin: the command exited 3"),
            "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.folder + "/no"))
    }

    @Test func anEmptyCommandIsAUsageError() async throws {
        let folder = try ScratchFolders.make("fastpull-hook-usage").path
        for option in ["--on-download-complete", "--on-download-error"] {
            let result = try await CLIRunner.run(["http://127.0.0.1:9/x", option, " "], in: folder)
            #expect(result.status == 2)
            #expect(
                result.stderr.contains("error: \(option): expected a command, got ' '"), "\(result.stderr)")
        }
    }
}
