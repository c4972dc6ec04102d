import FastpullFixtures
import Foundation
import Testing

@Suite("fastpull batches, --json, existing files, names and --dry-run")
struct BatchCLITests {
    let server: FixtureServer
    let folder: String

    init() throws {
        server = try FixtureServer()
        folder = try ScratchFolders.make("fastpull-batch").path
    }

    func contents(_ name: String) -> Data? { FileManager.default.contents(atPath: folder + "/" + name) }
    var listing: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted() }

    static func sha256(_ bytes: [UInt8]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sha256sum"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(bytes))
        try input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return String(text.prefix(64))
    }

    /// Every stdout line as a JSON object; fails the test for a line that is not one.
    func events(_ stdout: String) throws -> [[String: Any]] {
        try stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
    }

    /// A list line's checksum is reported as the line's, not as a --checksum the user gave.
    @Test func aListLinesChecksumIsReportedAsTheLines() async throws {
        let good = FixtureContent.bytes(count: 300_000, seed: 4)
        let list = [
            "# one file with its checksum",
            server.url("/gen/300000?seed=4").absoluteString + " one.bin sha256=" + (try Self.sha256(good)),
        ].joined(separator: "\n")
        try Data(list.utf8).write(to: URL(fileURLWithPath: folder + "/list.txt"))
        let result = try await CLIRunner.run(["-i", "list.txt"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("sha256 from input file list.txt line 2"), "\(result.stderr)")
        #expect(!result.stderr.contains("from --checksum"), "\(result.stderr)")
        #expect(result.stderr.contains("checksum verified"), "\(result.stderr)")
        // A wrong one fails as the line's, and names it.
        let wrong = list.replacingOccurrences(
            of: try Self.sha256(good), with: String(repeating: "0", count: 64))
        try Data(wrong.utf8).write(to: URL(fileURLWithPath: folder + "/wrong.txt"))
        try FileManager.default.removeItem(atPath: folder + "/one.bin")
        let failed = try await CLIRunner.run(["-i", "wrong.txt"], in: folder)
        #expect(failed.status == 6, "\(failed.stderr)")
        #expect(failed.stderr.contains("input file wrong.txt line 2"), "\(failed.stderr)")
    }

    @Test func aThreeFileBatchWithOneFailureIsValidNDJSONAndExitsWithItsCode() async throws {
        let good = FixtureContent.bytes(count: 300_000, seed: 4)
        let list = """
            # three files, the second one missing
            \(server.url("/gen/300000?seed=4").absoluteString) one.bin sha256=\(try Self.sha256(good))
            \(server.url("/gen/10?status=404").absoluteString) two.bin

            \(server.url("/gen/2000000?seed=5").absoluteString)
            """
        try Data(list.utf8).write(to: URL(fileURLWithPath: folder + "/list.txt"))
        let result = try await CLIRunner.run(["--json", "-j", "2", "-n", "2", "-i", "list.txt"], in: folder)
        #expect(result.status == 4, "\(result.stderr)")
        #expect(result.stdout.hasSuffix("\n"))
        let lines = try events(result.stdout)
        #expect(!lines.isEmpty)
        for line in lines {
            #expect(line["event"] is String)
        }
        let kinds = lines.compactMap { $0["event"] as? String }
        #expect(kinds.last == "summary")
        let summary = try #require(lines.last)
        #expect(summary["files"] as? Int == 3)
        #expect(summary["failed"] as? Int == 1)
        #expect(summary["exitCode"] as? Int == 4)
        func of(_ index: Int) -> [String] {
            lines.filter { $0["index"] as? Int == index }.compactMap { $0["event"] as? String }
        }
        #expect(of(0).first == "probe")
        #expect(of(0).contains("plan") && of(0).contains("verified"))
        #expect(of(0).last == "finished")
        #expect(of(1) == ["failed"])
        #expect(of(2).last == "finished")
        let failed = try #require(lines.first { $0["event"] as? String == "failed" })
        #expect(failed["code"] as? Int == 4)
        #expect(failed["error"] as? String == "httpStatus")
        let finished = try #require(
            lines.first { $0["event"] as? String == "finished" && $0["index"] as? Int == 0 })
        #expect(finished["output"] as? String == folder + "/one.bin")
        #expect(finished["size"] as? Int == 300_000)
        #expect((finished["digests"] as? [String: String])?["sha256"] == (try Self.sha256(good)))
        #expect(contents("one.bin") == Data(good))
        #expect(contents("2000000") == Data(FixtureContent.bytes(count: 2_000_000, seed: 5)))
        #expect(listing == ["2000000", "list.txt", "one.bin"])
        // The human side: each file's outcome and the tally, on stderr.
        #expect(result.stderr.contains("[1/3] saved \(folder)/one.bin"))
        #expect(result.stderr.contains("[2/3] error: HTTP 404"))
        #expect(result.stderr.contains("3 files: 2 saved, 1 failed; exit 4, the code of [2/3]"))
    }

    @Test func severalURLsAndStdinIntoAFolder() async throws {
        let list = server.url("/gen/1000?seed=7").absoluteString + " seven.bin\n"
        let result = try await CLIRunner.run(
            ["-q", "-d", "sub/dir", "-i", "-", server.url("/gen/2000").absoluteString], in: folder,
            input: Data(list.utf8))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty)
        #expect(contents("sub/dir/2000") == Data(FixtureContent.bytes(count: 2000, seed: 1)))
        #expect(contents("sub/dir/seven.bin") == Data(FixtureContent.bytes(count: 1000, seed: 7)))
    }

    /// `--no-clobber` (wget's `-nc`): a file that is there is kept as it is, unread, and the run goes
    /// on to what is missing (exit 0); `--auto-rename` saves beside it as NAME.1, NAME.2.
    @Test func noClobberKeepsWhatIsThereAndAutoRenameSavesBesideIt() async throws {
        try Data("old".utf8).write(to: URL(fileURLWithPath: folder + "/a.bin"))
        let list = [
            // Asked for, a.bin's URL would fail the run: it is not.
            server.url("/gen/3000?status=500").absoluteString + " a.bin",
            server.url("/gen/4000").absoluteString + " b.bin",
        ].joined(separator: "\n")
        try list.write(toFile: folder + "/list.txt", atomically: true, encoding: .utf8)
        server.resetStats()
        for spelling in ["--no-clobber", "-nc"] {
            try? FileManager.default.removeItem(atPath: folder + "/b.bin")
            let kept = try await CLIRunner.run(["-i", "list.txt", spelling, "--json"], in: folder)
            #expect(kept.status == 0, "\(spelling): \(kept.stderr)")
            #expect(contents("a.bin") == Data("old".utf8))
            #expect(contents("b.bin") == Data(FixtureContent.bytes(count: 4000, seed: 1)))
            #expect(kept.stderr.contains("a.bin is already there (3 B): kept as it is (--no-clobber)"))
            #expect(kept.stdout.contains("\"alreadyPresent\":true"))
        }

        let url = server.url("/gen/5000").absoluteString
        for expected in ["a.bin.1", "a.bin.2"] {
            let renamed = try await CLIRunner.run([url, "-o", "a.bin", "--auto-rename"], in: folder)
            #expect(renamed.status == 0, "\(renamed.stderr)")
            #expect(renamed.stderr.contains("saved \(folder)/\(expected)"), "\(renamed.stderr)")
            #expect(contents(expected) == Data(FixtureContent.bytes(count: 5000, seed: 1)))
        }
        #expect(contents("a.bin") == Data("old".utf8))

        let both = try await CLIRunner.run([url, "-o", "a.bin", "--force", "-nc"], in: folder)
        #expect(both.status == 2)
        #expect(both.stderr.contains("--force and --no-clobber cannot be used together"))
    }

    @Test func anExistingFileIsKeptRefusedOrReplaced() async throws {
        let bytes = FixtureContent.bytes(count: 50_000, seed: 1)
        let digest = try Self.sha256(bytes)
        let url = server.url("/gen/50000").absoluteString
        try Data(bytes).write(to: URL(fileURLWithPath: folder + "/x.bin"))
        server.resetStats()

        // It matches its checksum: done, and not a byte is fetched.
        let kept = try await CLIRunner.run(
            [url, "-o", "x.bin", "--checksum", "sha256=\(digest)", "--json"], in: folder)
        #expect(kept.status == 0, "\(kept.stderr)")
        #expect(kept.stderr.contains("is already here"))
        #expect(server.stats.requests == 0)
        #expect(kept.stdout.contains("\"alreadyPresent\":true"))

        // Without a checksum it is not overwritten…
        try Data("old".utf8).write(to: URL(fileURLWithPath: folder + "/x.bin"))
        let refused = try await CLIRunner.run([url, "-o", "x.bin"], in: folder)
        #expect(refused.status == 7)
        #expect(refused.stderr.contains("already exists; use --force"))
        #expect(contents("x.bin") == Data("old".utf8))
        let mismatched = try await CLIRunner.run(
            [url, "-o", "x.bin", "--checksum", "sha256=\(digest)"], in: folder)
        #expect(mismatched.status == 7)
        #expect(mismatched.stderr.contains("does not match its checksum"))
        #expect(server.stats.requests == 0)

        // …unless --force.
        let forced = try await CLIRunner.run([url, "-o", "x.bin", "--force", "-q"], in: folder)
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(contents("x.bin") == Data(bytes))
    }

    @Test func dryRunProbesAndPlansWithoutDownloading() async throws {
        let url = server.url("/gen/\(40 << 20)").absoluteString
        server.resetStats()
        let result = try await CLIRunner.run(["--dry-run", "-n", "4", url], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        for text in [
            "size           40.0 MiB (41943040 bytes)", "ranges         yes",
            "etag           \"gen-41943040-1\"",
            "last-modified  ", "digests        none offered", "output         \(folder)/41943040",
            "plan           ", "segments of up to",
            "over up to 4 connections",
        ] {
            #expect(result.stdout.contains(text), "\(text)")
        }
        #expect(server.stats.bodyBytesSent <= 1)
        #expect(listing.isEmpty)

        let json = try await CLIRunner.run(
            [
                "--dry-run", "--json", "-n", "4", url, server.url("/gen/5?status=500").absoluteString,
                "--retries", "0",
            ], in: folder)
        #expect(json.status == 4)
        let lines = try events(json.stdout)
        #expect(lines.compactMap { $0["event"] as? String } == ["probe", "plan", "failed", "summary"])
        #expect(lines[1]["connections"] as? Int == 4)
        #expect(lines[3]["dryRun"] as? Bool == true)
        #expect(listing.isEmpty)
    }

    /// The dry run says what the real run would do with what is on disk: a file a run saved and the
    /// server still offers is complete (nothing to download); an interrupted download is resumed
    /// (the plan is what is left, its resumed bytes those the real run then keeps).
    @Test func dryRunSaysWhatIsOnDisk() async throws {
        let url = server.url("/gen/3000000?seed=51").absoluteString
        let saved = try await CLIRunner.run([url, "-o", "done.bin", "-q"], in: folder)
        #expect(saved.status == 0, "\(saved.stderr)")
        let complete = try await CLIRunner.run(["--dry-run", url, "-o", "done.bin"], in: folder)
        #expect(complete.status == 0)
        #expect(
            complete.stdout.contains(
                "done.bin (already complete and unchanged on the server; a run downloads nothing)"),
            "\(complete.stdout)")
        try Data("mine".utf8).write(to: URL(fileURLWithPath: folder + "/mine.bin"))
        let mine = try await CLIRunner.run(["--dry-run", url, "-o", "mine.bin"], in: folder)
        #expect(mine.stdout.contains("mine.bin (exists; refused without --force)"), "\(mine.stdout)")
        let nc = try await CLIRunner.run(["--dry-run", url, "-o", "mine.bin", "-nc"], in: folder)
        #expect(nc.stdout.contains("mine.bin (exists; kept as it is (--no-clobber))"), "\(nc.stdout)")

        // Interrupted after a second at 1 MB/s on one connection.
        let slow = server.url("/gen/4000000?seed=52&rate=1000000").absoluteString
        let stopped = try await CLIRunner.run([slow, "-o", "part.bin", "-n", "1", "-m", "1"], in: folder)
        #expect(stopped.status == 3, "\(stopped.stderr)")
        let planned = try await CLIRunner.run(["--dry-run", "--json", slow, "-o", "part.bin"], in: folder)
        let plan = try #require(try events(planned.stdout).first { $0["event"] as? String == "plan" })
        let kept = try #require(plan["resumedBytes"] as? Int)
        #expect(kept > 0)
        let text = try await CLIRunner.run(["--dry-run", slow, "-o", "part.bin"], in: folder)
        #expect(text.stdout.contains("already in part.bin.part"), "\(text.stdout)")
        let resumed = try await CLIRunner.run([slow, "-o", "part.bin", "--json"], in: folder)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let real = try #require(try events(resumed.stdout).first { $0["event"] as? String == "plan" })
        #expect(real["resumedBytes"] as? Int == kept)
    }

    @Test func theNameComesFromContentDispositionMadeSafe() async throws {
        let body = Array("hello, disposition\n".utf8)
        let server = try HeaderServer(routes: [
            "/download?id=1": .init(
                body: body,
                headers: [
                    (
                        "Content-Disposition",
                        "attachment; filename=\"../../fallback.txt\"; filename*=UTF-8''%E2%82%AC%20report.txt"
                    )
                ]),
            "/download?id=2": .init(
                body: body, headers: [("Content-Disposition", "attachment; filename=\"../.bashrc\"")]),
            "/files/plain%20name.txt": .init(body: body, headers: []),
            "/download?id=3": .init(
                body: body, headers: [("Content-Disposition", "attachment; filename=\"..\"")]),
        ])
        defer { server.stop() }
        let result = try await CLIRunner.run(
            [
                "-q", server.url("/download?id=1").absoluteString,
                server.url("/download?id=2").absoluteString,
                server.url("/files/plain%20name.txt").absoluteString,
                server.url("/download?id=3").absoluteString,
            ], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(listing == ["bashrc", "download", "plain name.txt", "€ report.txt"])
        #expect(contents("€ report.txt") == Data(body))
    }

    @Test func jsonForOneFileAndTheSummaryLine() async throws {
        let result = try await CLIRunner.run(
            ["--json", "-q", server.url("/gen/100000").absoluteString, "-o", "j.bin"], in: folder)
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        let kinds = try events(result.stdout).compactMap { $0["event"] as? String }
        #expect(kinds.first == "probe")
        #expect(Array(kinds.suffix(3)) == ["verified", "finished", "summary"])
    }

    @Test func progressLinesWhenNotATerminal() async throws {
        // Slow enough for at least one plain progress line (every few seconds) before it ends.
        let url = server.url("/gen/\(4 << 20)?rate=600000").absoluteString
        let result = try await CLIRunner.run(["-n", "1", url, "-o", "slow.bin"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let progress = result.stderr.split(separator: "\n").filter { $0.contains("%") && $0.contains("conn") }
        #expect(!progress.isEmpty, "\(result.stderr)")
        #expect(!result.stderr.contains("\u{1B}["), "no terminal escapes when stderr is not a terminal")
    }

    @Test func usageErrorsForBatchesExitTwo() async throws {
        try Data("http://h/x\nftp://h/y\n".utf8).write(to: URL(fileURLWithPath: folder + "/bad.txt"))
        let result = try await CLIRunner.run(["-i", "bad.txt"], in: folder)
        #expect(result.status == 2)
        #expect(
            result.stderr
                == "fastpull: error: bad.txt:2: unsupported scheme 'ftp' in 'ftp://h/y' (use http or https)\n"
        )
        try Data("# nothing\n".utf8).write(to: URL(fileURLWithPath: folder + "/empty.txt"))
        let empty = try await CLIRunner.run(["-i", "empty.txt"], in: folder)
        #expect(empty.status == 2)
        #expect(empty.stderr.contains("lists no URL"))
    }
}
