import FastpullFixtures
import Foundation
import Testing

/// What scripts written for curl and aria2 use: URL globbing (`-g` off), `--max-filesize`,
/// `-w`/`--write-out` and `--log`.
@Suite("fastpull globbing, --max-filesize, --write-out, --log")
struct ScriptingCLITests {
    func contents(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

    @Test func aURLRangeIsABatchAndGlobOffTakesItAsItIs() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-glob")
        for shard in 1...3 {
            try Data("shard \(shard)\n".utf8).write(
                to: URL(fileURLWithPath: workspace.served + "/model-0000\(shard)-of-00003.bin"))
        }
        try Data("literal\n".utf8).write(to: URL(fileURLWithPath: workspace.served + "/a[1].txt"))
        let base = workspace.server.url("/files/").absoluteString
        let result = try await CLIRunner.run(
            [base + "model-[00001-00003]-of-00003.bin", "-d", "out"], in: workspace.folder)
        #expect(result.status == 0, "\(result.stderr)")
        for shard in 1...3 {
            #expect(
                contents(workspace.folder + "/out/model-0000\(shard)-of-00003.bin")
                    == Data("shard \(shard)\n".utf8))
        }

        let literal = try await CLIRunner.run(["-g", base + "a[1].txt", "-o", "a.txt"], in: workspace.folder)
        #expect(literal.status == 0, "\(literal.stderr)")
        #expect(contents(workspace.folder + "/a.txt") == Data("literal\n".utf8))

        let backwards = try await CLIRunner.run([base + "x[3-1]"], in: workspace.folder)
        #expect(backwards.status == 2)
        #expect(backwards.stderr.contains("the range [3-1] runs backwards (use -g"), "\(backwards.stderr)")
    }

    @Test func aFileLargerThanMaxFilesizeIsRefusedBeforeItIsFetched() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-max-filesize")
        let large = workspace.server.url("/gen/\(2 << 20)?seed=81").absoluteString
        let refused = try await CLIRunner.run(
            [large, "-o", "x.bin", "--max-filesize", "1M"], in: workspace.folder)
        #expect(refused.status == 6, "\(refused.stderr)")
        #expect(
            refused.stderr.contains(
                "is 2.0 MiB (2097152 bytes), more than the 1.0 MiB (1048576 bytes) allowed; nothing was downloaded"
            ),
            "\(refused.stderr)")
        #expect(contents(workspace.folder + "/x.bin") == nil)
        #expect(contents(workspace.folder + "/x.bin.part") == nil)

        // A size the server does not tell: refused when the file ends larger, and not kept.
        let chunked = workspace.server.url("/gen/\(2 << 20)?seed=81&chunked=1&no-ranges=1").absoluteString
        let unknown = try await CLIRunner.run(
            [chunked, "-o", "y.bin", "--max-filesize", "1M"], in: workspace.folder)
        #expect(unknown.status == 6, "\(unknown.stderr)")
        #expect(unknown.stderr.contains("more than the 1048576 allowed"), "\(unknown.stderr)")
        #expect(contents(workspace.folder + "/y.bin") == nil)

        let fits = try await CLIRunner.run(
            [large, "-o", "z.bin", "--max-filesize", "2M"], in: workspace.folder)
        #expect(fits.status == 0, "\(fits.stderr)")

        let bad = try await CLIRunner.run([large, "--max-filesize", "lots"], in: workspace.folder)
        #expect(bad.status == 2)
        #expect(
            bad.stderr.contains("error: --max-filesize: expected a size like 500M or 2GiB, got 'lots'"),
            "\(bad.stderr)")
    }

    @Test func writeOutPrintsCurlsVariablesAfterEachFile() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-write-out")
        let good = workspace.server.url("/gen/4000?seed=82").absoluteString
        let missing = workspace.server.url("/gen/1?status=404").absoluteString
        let result = try await CLIRunner.run(
            [
                good, missing, "-d", "out", "-w",
                #"%{http_code} %{size_download} %{filename_effective} %{url_effective} %{exitcode} %{time_total} %{speed_download}%%\n"#,
            ], in: workspace.folder)
        #expect(result.status == 4, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map {
            $0.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        }
        #expect(lines.count == 2, "\(result.stdout)")
        #expect(lines.map(\.count) == [7, 7], "\(result.stdout)")
        guard lines.map(\.count) == [7, 7] else { return }
        #expect(Array(lines[0][0...4]) == ["200", "4000", workspace.folder + "/out/4000", good, "0"])
        // No name yet: the server was to give it.
        #expect(Array(lines[1][0...2]) == ["404", "0", ""])
        #expect(lines[1][3] == missing)
        #expect(lines[1][4] == "4")
        #expect(lines[0][5].wholeMatch(of: /[0-9]+\.[0-9]{6}/) != nil, "\(lines[0][5])")
        #expect(lines[0][6].hasSuffix("%"))

        // @FILE reads the format; an unknown variable is refused by name.
        try #"[%{http_code}]"#.write(toFile: workspace.folder + "/format", atomically: true, encoding: .utf8)
        let fromFile = try await CLIRunner.run(
            [good, "-o", "again.bin", "-w", "@format"], in: workspace.folder)
        #expect(fromFile.stdout == "[200]", "\(fromFile.stdout)")
        let unknown = try await CLIRunner.run([good, "-w", "%{nope}"], in: workspace.folder)
        #expect(unknown.status == 2)
        #expect(
            unknown.stderr.contains("error: --write-out: unknown variable '%{nope}'"), "\(unknown.stderr)")
        let both = try await CLIRunner.run([good, "-w", "x", "--json"], in: workspace.folder)
        #expect(both.status == 2)
        #expect(both.stderr.contains("--json and --write-out"), "\(both.stderr)")
    }

    @Test func dumpHeaderWritesEveryResponseHeadAsItArrives() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-dump-header")
        let url = workspace.server.url("/redirect-to?url=/gen/3000%3Fseed%3D84").absoluteString
        let result = try await CLIRunner.run([url, "-o", "x.bin", "-D", "heads.txt"], in: workspace.folder)
        #expect(result.status == 0, "\(result.stderr)")
        let heads = try String(contentsOfFile: workspace.folder + "/heads.txt", encoding: .utf8)
        #expect(heads.hasPrefix("HTTP/1.1 302 Found\r\n"), "\(heads)")
        #expect(heads.contains("Location: /gen/3000?seed=84\r\n"), "\(heads)")
        #expect(heads.contains("\r\n\r\nHTTP/1.1 20"), "\(heads)")
        #expect(heads.hasSuffix("\r\n\r\n"))
        // Not -v: nothing of it on stderr.
        #expect(!result.stderr.contains("< HTTP/1.1"), "\(result.stderr)")

        let toStdout = try await CLIRunner.run([url, "-o", "y.bin", "-D", "-"], in: workspace.folder)
        #expect(toStdout.status == 0, "\(toStdout.stderr)")
        #expect(toStdout.stdout.hasPrefix("HTTP/1.1 302 Found\r\n"), "\(toStdout.stdout)")
        let clash = try await CLIRunner.run([url, "-D", "-", "--json"], in: workspace.folder)
        #expect(clash.status == 2)
        #expect(
            clash.stderr.contains(
                "error: --dump-header -: --json writes to standard output too; give a file"),
            "\(clash.stderr)")
    }

    @Test func theLogHasEveryMessageWithItsTime() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-log")
        let good = workspace.server.url("/gen/3000?seed=83").absoluteString
        let missing = workspace.server.url("/gen/1?status=404").absoluteString
        let result = try await CLIRunner.run(
            [good, missing, "-d", "out", "-l", "run.log"], in: workspace.folder)
        #expect(result.status == 4, "\(result.stderr)")
        let log = try String(contentsOfFile: workspace.folder + "/run.log", encoding: .utf8)
        let lines = log.split(separator: "\n")
        #expect(lines.contains { $0.contains("HTTP 404") }, "\(log)")
        #expect(lines.contains { $0.contains("1 failed") }, "\(log)")
        #expect(
            lines.allSatisfy {
                $0.prefixMatch(of: #/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z /#) != nil
            },
            "\(log)")

        let unwritable = try await CLIRunner.run(
            [good, "--log", workspace.folder + "/no/such/folder/x.log"], in: workspace.folder)
        #expect(unwritable.status == 7)
        #expect(unwritable.stderr.contains("error: --log: cannot open"), "\(unwritable.stderr)")
    }
}
