import FastpullFixtures
import Foundation
import Synchronization
import Testing

@testable import FastpullHTTP

/// Files that change under a download: replaced while it runs, or modified just before it starts.
@Suite("Files that change on real origin servers")
struct ChangingFileTests {
    /// Replaced atomically with other bytes of the same size once the download has written some: the
    /// result is exactly one version (exit 0) or a refusal (exit 5), never a mix of both.
    @Test("file replaced mid-download never yields a mixed file", arguments: Origin.allCases)
    func replacedMidDownload(origin: Origin) async throws {
        let size = 24 * TestContent.mebibyte
        try await origin.serve { host in
            try await InteropFolder.with("replaced-\(origin.rawValue)") { folder in
                let old = await TestContent.random(
                    size, seed: TestContent.seed("replaced-old", origin.rawValue))
                let new = await TestContent.random(
                    size, seed: TestContent.seed("replaced-new", origin.rawValue))
                let url = try await host.publish("moving.bin", old)
                let output = folder + "/moving.bin"
                let (progress, feed) = AsyncStream<Int64>.makeStream()
                // 2 MiB/s over 4 connections: about 12 s, so the replacement lands in the middle even
                // when a loaded machine reacts to the first progress event seconds late.
                let run = try FastpullProcess(
                    [url, "-o", output, "-n", "4", "--limit-rate", "2M/s", "--json"], in: folder
                ) { line, _ in
                    if let event = JSONEvent(line: line), event.name == "progress",
                        let bytes = event.int("bytes")
                    {
                        feed.yield(bytes)
                    }
                }
                let ended = Task {
                    let result = await run.finished()
                    feed.finish()
                    return result
                }
                var replacedAt: Int64?
                var replacedWhileRunning = false
                for await bytes in progress where bytes >= Int64(TestContent.mebibyte) {
                    try await host.replace("moving.bin", with: new)
                    replacedWhileRunning = !run.hasFinished
                    replacedAt = bytes
                    break
                }
                let result = await ended.value
                let written = try #require(
                    replacedAt, "\(origin): the download ended before it reported 1 MiB written: \(result)")
                try #require(
                    replacedWhileRunning && written < Int64(size),
                    "\(origin): the file was replaced only after the download ended (\(written) bytes reported)"
                )

                let version = await InteropFolder.version(output, old: old, new: new)
                switch result.status {
                case 0:
                    #expect(
                        version == "old" || version == "new",
                        "\(origin): exit 0 with a file that is neither version, replaced at \(written) bytes: \(version)"
                    )
                case 5:
                    #expect(version == "missing", "\(origin): exit 5 but a file is at the output path")
                default:
                    Issue.record("\(origin): expected exit 0 (one version) or 5 (changed), got \(result)")
                }
            }
        }
    }

    /// A file modified a second before the download is an ordinary file: exit 0, identical. (Apache
    /// treats an `If-Range` date as a mismatch while the file is younger than 60 s; a client that has
    /// only the date to validate with, as against `apache2-no-etag`, must still get the file.)
    @Test("file modified a second ago downloads", arguments: Origin.allCases)
    func modifiedASecondAgo(origin: Origin) async throws {
        let size = 8 * TestContent.mebibyte
        try await origin.serve { host in
            try await InteropFolder.with("recent-\(origin.rawValue)") { folder in
                let data = await TestContent.random(size, seed: TestContent.seed("recent", origin.rawValue))
                // For S3 the object is simply put now: its Last-Modified is the moment of the PUT.
                let url = try await host.publish("fresh.bin", data, modified: Date().addingTimeInterval(-1))
                let output = folder + "/fresh.bin"
                let result = try await FastpullProcess.run([url, "-o", output, "-n", "4", "-q"], in: folder)
                #expect(result.status == 0, "\(origin): \(result)")
                let comparison = await InteropFolder.compare(output, to: data)
                #expect(comparison == .identical, "\(origin): \(comparison)")
            }
        }
    }
}
