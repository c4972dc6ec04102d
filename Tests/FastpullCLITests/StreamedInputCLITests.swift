import FastpullFixtures
import Foundation
import Testing

/// `-i -` read as it comes: each file starts once its entry is complete, while the input is still
/// open (before: nothing started until the input ended, so `generate-urls | fastpull -i -` waited for
/// the generator).
extension BatchCLITests {
    /// Starts `fastpull` with a pipe on its stdin, left open for the test to write to.
    func startFed(_ arguments: [String]) throws -> (Process, Pipe, Pipe, FileHandle) {
        let process = Process()
        process.executableURL = CLIRunner.fastpull
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        let out = Pipe()
        let err = Pipe()
        let input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        return (process, out, err, input.fileHandleForWriting)
    }

    /// Whether `name` holds `bytes` within 30 s.
    func arrives(_ name: String, _ bytes: Data) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while contents(name) != bytes {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// The first file is saved while the input is still open; an entry's option lines written with
    /// its URL line are its own (`out=` in a folder made for it); the run ends with the input.
    @Test func eachLineOfStandardInputStartsAsItComes() async throws {
        let (process, out, err, input) = try startFed(["-i", "-"])
        input.write(Data((server.url("/gen/3000?seed=1").absoluteString + " first.bin\n").utf8))
        let first = Data(FixtureContent.bytes(count: 3000, seed: 1))
        #expect(try await arrives("first.bin", first), "the first file waited for the end of input")
        #expect(process.isRunning)
        input.write(Data((server.url("/gen/5000?seed=2").absoluteString + "\n  out=sub/second.bin\n").utf8))
        try input.close()
        let result = await CLIRunner.finish(process, out, err)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(contents("first.bin") == first)
        #expect(contents("sub/second.bin") == Data(FixtureContent.bytes(count: 5000, seed: 2)))
        #expect(result.stderr.contains("2 files: 2 saved"), "\(result.stderr)")
    }

    /// A bad line is said when it is read and skipped: the lines around it are fetched, and the run
    /// exits 2 (a usage error) at the end. So is an option line that comes after its file started,
    /// and an input with no URL.
    @Test func aBadLineOfStandardInputIsSaidAndTheRestFetched() async throws {
        let (process, out, err, input) = try startFed(["-i", "-"])
        input.write(Data((server.url("/gen/2000?seed=3").absoluteString + " a.bin\n").utf8))
        #expect(try await arrives("a.bin", Data(FixtureContent.bytes(count: 2000, seed: 3))))
        input.write(Data("  out=late.bin\nnot-a-url\n".utf8))
        input.write(Data((server.url("/gen/1000?seed=4").absoluteString + " b.bin\n").utf8))
        try input.close()
        let result = await CLIRunner.finish(process, out, err)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "error: standard input:2: an option line ('out=late.bin') came after its file's download started"
            ),
            "\(result.stderr)")
        #expect(
            result.stderr.contains("error: standard input:3: 'not-a-url' is not a valid URL"),
            "\(result.stderr)")
        #expect(contents("b.bin") == Data(FixtureContent.bytes(count: 1000, seed: 4)))
        #expect(contents("late.bin") == nil)

        let empty = try await CLIRunner.run(["-i", "-"], in: folder, input: Data("# nothing\n".utf8))
        #expect(empty.status == 2)
        #expect(empty.stderr.contains("error: standard input lists no URL"), "\(empty.stderr)")
    }

    /// With an option that needs to know the run has one file (`-o`), the input is read whole first,
    /// as before: one line is one file saved under that name; two lines are a usage error before
    /// anything is fetched.
    @Test func standardInputWithOutputIsReadWholeFirst() async throws {
        let one = try await CLIRunner.run(
            ["-i", "-", "-o", "named.bin"], in: folder,
            input: Data((server.url("/gen/1500?seed=5").absoluteString + "\n").utf8))
        #expect(one.status == 0, "\(one.stderr)")
        #expect(contents("named.bin") == Data(FixtureContent.bytes(count: 1500, seed: 5)))
        server.resetStats()
        let two = try await CLIRunner.run(
            ["-i", "-", "-o", "named2.bin"], in: folder,
            input: Data(
                (server.url("/gen/1500").absoluteString + "\n" + server.url("/gen/1600").absoluteString + "\n")
                    .utf8))
        #expect(two.status == 2)
        #expect(two.stderr.contains("error: --output: names one file"), "\(two.stderr)")
        #expect(server.stats.requests == 0)
    }

    /// Half a line, then a pause longer than the one that starts an entry: the entry waits for its
    /// line to end, so the option lines that follow are its own (before: the file started under the
    /// server's name, without its checksum).
    @Test func aPauseInTheMiddleOfALineStartsNothing() async throws {
        let (process, out, err, input) = try startFed(["-i", "-", "--json"])
        input.write(Data((server.url("/gen/2500?seed=6").absoluteString + "\n  out=na").utf8))
        // The input's own shape: half an option line, then silence longer than the pause.
        try await Task.sleep(for: .milliseconds(600))
        let hex = try Self.sha256(FixtureContent.bytes(count: 2500, seed: 6))
        input.write(Data("med.bin\n  checksum=sha-256=\(hex)\n".utf8))
        try input.close()
        let result = await CLIRunner.finish(process, out, err)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(contents("named.bin") == Data(FixtureContent.bytes(count: 2500, seed: 6)))
        #expect(contents("2500") == nil)
        #expect(result.stdout.contains("input file stdin line 1"), "\(result.stdout)")
    }

    /// Three lines naming one output: the first has it; each of the others fails once, told once
    /// (before: the reader's early failures were told again when the run started, hooks ran twice).
    @Test func aCollisionOnStandardInputIsToldOnce() async throws {
        let url = server.url("/gen/1000?seed=7").absoluteString
        let result = try await CLIRunner.run(
            ["-i", "-", "--json"], in: folder,
            input: Data("\(url) dup.bin\n\(url) dup.bin\n\(url) dup.bin\n".utf8))
        #expect(result.status == 7, "\(result.stderr)")
        let failed = try events(result.stdout).filter { $0["event"] as? String == "failed" }
        #expect(failed.count == 2, "\(failed)")
        #expect(Set(failed.compactMap { $0["index"] as? Int }).count == 2)
        #expect(contents("dup.bin") == Data(FixtureContent.bytes(count: 1000, seed: 7)))
    }

    /// `--max-time` passing while the input is still open stops the run and says so, the rest of
    /// the input unread (before: exit 2 and no word, or exit 0 with lines never read).
    @Test func theDeadlineStopsAWaitForInput() async throws {
        let (process, out, err, input) = try startFed(["-i", "-", "-m", "1"])
        input.write(Data((server.url("/gen/1000?seed=8").absoluteString + " early.bin\n").utf8))
        let result = await CLIRunner.finish(process, out, err)
        try? input.close()
        #expect(result.status == 3, "\(result.stderr)")
        #expect(result.stderr.contains("stopped: --max-time 1 s passed"), "\(result.stderr)")
        #expect(result.stderr.contains("the rest of standard input was not read"), "\(result.stderr)")
        #expect(contents("early.bin") == Data(FixtureContent.bytes(count: 1000, seed: 8)))
    }

    /// A list line's own folder (`dir=`) is made, as `out=sub/x`'s is.
    @Test func aListLinesFolderIsMade() async throws {
        let list = server.url("/gen/1200?seed=9").absoluteString + "\n  dir=made/here\n"
        let result = try await CLIRunner.run(["-i", "-", "-q"], in: folder, input: Data(list.utf8))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(contents("made/here/1200") == Data(FixtureContent.bytes(count: 1200, seed: 9)))
    }
}
