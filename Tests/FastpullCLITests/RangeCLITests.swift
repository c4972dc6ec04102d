import FastpullFixtures
import Foundation
import Testing

/// `-r`/`--range`: the output is exactly the bytes asked for, fetched in segments, resumed like any
/// file; a server that ignores ranges, or a range past the file's end, fails before a byte is written.
@Suite("fastpull --range")
struct RangeCLITests {
    let size = 2 << 20

    func contents(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

    @Test func theOutputIsExactlyThePartAskedForAndNothingElseIsFetched() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-range")
        let url = workspace.server.url("/gen/\(size)?seed=51").absoluteString
        let whole = Data(FixtureContent.bytes(count: size, seed: 51))
        // START-END over several connections, each a segment of the part.
        let result = try await CLIRunner.run(
            [
                url, "-o", "part.bin", "-r", "1000-1200999", "-n", "4", "--min-segment", "128K", "--trace",
                "part.trace",
            ], in: workspace.folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(contents(workspace.folder + "/part.bin") == whole[1000...1_200_999])
        // Every window asked for lies inside the part (the trace counts from its first byte), and the
        // server sent what they asked: the part, and on a loaded machine a window a stalled
        // connection held, fetched again by another (seen once: 256 KiB twice).
        let trace = String(decoding: contents(workspace.folder + "/part.trace") ?? Data(), as: UTF8.self)
        let windows = trace.split(separator: "\n").compactMap { line -> (Int64, Int64)? in
            guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                event["event"] as? String == "window", let start = event["start"] as? Int64,
                let end = event["end"] as? Int64
            else { return nil }
            return (start, end)
        }
        #expect(!windows.isEmpty)
        #expect(windows.allSatisfy { $0.0 >= 0 && $0.1 <= 1_200_000 }, "\(windows)")
        let sent = workspace.server.stats.bodyBytesSent
        #expect(sent >= 1_200_000 && sent <= windows.reduce(0) { $0 + $1.1 - $1.0 }, "\(sent)")

        // -N: the last N bytes; START-: to the end; an END past the end: to the end.
        workspace.server.resetStats()
        for (range, expected) in [
            ("-5000", whole[(size - 5000)...]), ("2000000-", whole[2_000_000...]),
            ("2097000-9999999", whole[2_097_000...]),
        ] {
            let name = "r\(range).bin"
            let run = try await CLIRunner.run([url, "-o", name, "--range", range], in: workspace.folder)
            #expect(run.status == 0, "\(range): \(run.stderr)")
            #expect(contents(workspace.folder + "/" + name) == expected, "\(range)")
        }
        #expect(workspace.server.stats.bodyBytesSent == Int64(5000 + (size - 2_000_000) + (size - 2_097_000)))
    }

    @Test func aStoppedPartResumesAndAnotherPartStartsOver() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-range-resume")
        // 1.5 MB at 500 kB/s on one connection: three seconds; -m 1 stops it after one.
        let url = workspace.server.url("/gen/\(size)?seed=52&rate=500000").absoluteString
        let whole = Data(FixtureContent.bytes(count: size, seed: 52))
        let stopped = try await CLIRunner.run(
            [url, "-o", "part.bin", "-r", "100000-1599999", "-n", "1", "-m", "1"], in: workspace.folder)
        #expect(stopped.status == 3, "\(stopped.stderr)")
        #expect(contents(workspace.folder + "/part.bin") == nil)
        #expect(FileManager.default.fileExists(atPath: workspace.folder + "/part.bin.part"))

        let resumed = try await CLIRunner.run(
            [url, "-o", "part.bin", "-r", "100000-1599999", "-n", "2"], in: workspace.folder)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stderr.contains("resumed after"), "\(resumed.stderr)")
        #expect(contents(workspace.folder + "/part.bin") == whole[100_000...1_599_999])

        // A partial file of one part is not resumed as another of the same length.
        let other = try await CLIRunner.run(
            [url, "-o", "other.bin", "-r", "0-599999", "-n", "1", "-m", "1"], in: workspace.folder)
        #expect(other.status == 3, "\(other.stderr)")
        let shifted = try await CLIRunner.run(
            [url, "-o", "other.bin", "-r", "1-600000", "-n", "2"], in: workspace.folder)
        #expect(shifted.status == 0, "\(shifted.stderr)")
        #expect(!shifted.stderr.contains("resumed after"), "\(shifted.stderr)")
        #expect(contents(workspace.folder + "/other.bin") == whole[1...600_000])
    }

    /// A part is not the URL's file: no record says it is, so a rerun for another part of the same
    /// length is not "already complete" (it was, with the first part's bytes kept).
    @Test func aSavedPartIsNotTakenForAnotherPart() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-range-rerun")
        let url = workspace.server.url("/gen/\(size)?seed=55").absoluteString
        let whole = Data(FixtureContent.bytes(count: size, seed: 55))
        let first = try await CLIRunner.run([url, "-o", "p.bin", "-r", "100-199"], in: workspace.folder)
        #expect(first.status == 0, "\(first.stderr)")
        let other = try await CLIRunner.run([url, "-o", "p.bin", "-r", "200-299"], in: workspace.folder)
        #expect(other.status == 7, "\(other.stderr)")
        #expect(!other.stderr.contains("already complete"), "\(other.stderr)")
        #expect(contents(workspace.folder + "/p.bin") == whole[100...199])
        let forced = try await CLIRunner.run(
            [url, "-o", "p.bin", "-r", "200-299", "--force"], in: workspace.folder)
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(contents(workspace.folder + "/p.bin") == whole[200...299])
    }

    /// A checksum file is fetched whole, and its line checks the part.
    @Test func aChecksumFileChecksThePartAndIsFetchedWhole() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-range-checksum-file")
        let url = workspace.server.url("/gen/\(size)?seed=56").absoluteString
        let part = Data(FixtureContent.bytes(count: size, seed: 56))[5000...5099]
        try part.write(to: URL(fileURLWithPath: workspace.folder + "/expected"))
        let sha = try await CLIRunner.shell("sha256sum expected | cut -c1-64", in: workspace.folder).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try "\(sha)  part.bin\n".write(
            toFile: workspace.served + "/SHA256SUMS", atomically: true, encoding: .utf8)
        let sums = workspace.server.url("/files/SHA256SUMS").absoluteString
        let result = try await CLIRunner.run(
            [url, "-o", "part.bin", "-r", "5000-5099", "--checksum-file", sums], in: workspace.folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(contents(workspace.folder + "/part.bin") == part)
    }

    @Test func aServerThatIgnoresRangesIsAnErrorAndNothingIsWritten() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-range-ignored")
        let url = workspace.server.url("/gen/\(size)?seed=53&no-ranges=1").absoluteString
        let result = try await CLIRunner.run([url, "-o", "part.bin", "-r", "0-999"], in: workspace.folder)
        #expect(result.status == 4, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "answered 200 with the whole file to a request for bytes 0-999; a part of a file needs a server that serves ranges"
            ), "\(result.stderr)")
        #expect(contents(workspace.folder + "/part.bin") == nil)
        let part = contents(workspace.folder + "/part.bin.part")
        #expect(part == nil || part?.allSatisfy { $0 == 0 } == true, "bytes of the whole file were written")
    }

    @Test func aPartPastTheEndIsAnError() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-range-outside")
        let url = workspace.server.url("/gen/\(size)?seed=54").absoluteString
        let result = try await CLIRunner.run(
            [url, "-o", "part.bin", "-r", "3000000-"], in: workspace.folder)
        #expect(result.status == 4, "\(result.stderr)")
        #expect(
            result.stderr.contains("bytes 3000000- lie outside the file at"), "\(result.stderr)")
        #expect(result.stderr.contains("(it has \(size) bytes)"), "\(result.stderr)")
        #expect(contents(workspace.folder + "/part.bin") == nil)
    }

    @Test(arguments: [
        ("abc", "expected START-END, START- or -N"), ("5-3", "the end comes before the start"),
        ("0-9,20-29", "takes one range"), ("-0", "expected START-END"), ("1-2-3", "expected START-END"),
    ])
    func aBadRangeIsAUsageError(value: String, message: String) async throws {
        let folder = try ScratchFolders.make("fastpull-range-usage").path
        let result = try await CLIRunner.run(["http://127.0.0.1:9/x", "-r", value], in: folder)
        #expect(result.status == 2)
        #expect(result.stderr.contains("error: --range: \(message)"), "\(result.stderr)")
        #expect(result.stderr.contains("got '\(value)'"), "\(result.stderr)")
    }
}
