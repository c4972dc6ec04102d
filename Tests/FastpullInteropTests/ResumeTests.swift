import FastpullFixtures
import Foundation
import Testing

@testable import FastpullHTTP

/// Interrupted with SIGINT once bytes are written, then run again: the second run resumes.
@Suite("Resume after SIGINT against real origin servers")
struct ResumeTests {
    @Test("resume after SIGINT", arguments: Origin.allCases)
    func resumeAfterInterrupt(origin: Origin) async throws {
        let size = 24 * TestContent.mebibyte
        // A third of the file is kept: the resumed run must fetch the rest, and its cut and hedged
        // windows (a busy machine makes connections look slow) must cost less than what was kept.
        let threshold = Int64(8 * TestContent.mebibyte)
        try await origin.serve { host in
            try await InteropFolder.with("resume-\(origin.rawValue)") { folder in
                let data = await TestContent.random(size, seed: TestContent.seed("resume", origin.rawValue))
                var url = try await host.publish("resume.bin", data)
                // moto logs no byte counts: both runs go through a relay that counts what it serves.
                var relay: RecordingRelay?
                if let s3 = host as? S3Host {
                    (url, relay) = try s3.throughRelay("resume.bin")
                }
                defer { relay?.stop() }
                let output = folder + "/resume.bin"
                // 4 MiB/s: about 6 s. The first progress event (about one a second) past 8 MiB
                // interrupts it, from the thread that reads the event.
                let first = try FastpullProcess(
                    [url, "-o", output, "-n", "4", "--limit-rate", "4M/s", "--json"], in: folder
                ) { line, process in
                    if let event = JSONEvent(line: line), event.name == "progress",
                        let bytes = event.int("bytes"), bytes >= threshold, bytes < Int64(size)
                    {
                        process.interrupt()
                    }
                }
                let interrupted = await first.finished()
                let reported = interrupted.events("progress").compactMap { $0.int("bytes") }
                try #require(
                    reported.contains { $0 >= threshold && $0 < Int64(size) },
                    "\(origin): no progress event between 8 MiB and the end: \(interrupted)")
                try #require(interrupted.status == 130, "\(origin): the interrupted run: \(interrupted)")
                #expect(InteropFolder.isAbsent(output), "\(origin): an interrupted run left the output")

                let mark = await host.server.accessLog.mark()
                let relayedBefore = relay?.upstreamByteCount ?? 0
                let second = try await FastpullProcess.run(
                    [url, "-o", output, "-n", "4", "--json"], in: folder)
                #expect(second.status == 0, "\(origin): the resumed run: \(second)")
                let comparison = await InteropFolder.compare(output, to: data)
                #expect(comparison == .identical, "\(origin): the resumed file: \(comparison)")

                let kept = second.events("resumed").first?.int("keptBytes") ?? 0
                #expect(
                    kept > 0, "\(origin): the second run did not resume (no resumed event with keptBytes > 0)"
                )
                if let fetched = second.events("finished").first?.int("bytesFetched") {
                    #expect(
                        fetched < Int64(size), "\(origin): the second run fetched \(fetched) of \(size) bytes"
                    )
                } else {
                    Issue.record("\(origin): the second run printed no finished event: \(second)")
                }
                if let relay {
                    // Heads included: the bodies are less.
                    let sent = relay.upstreamByteCount - relayedBefore
                    #expect(
                        sent < Int64(size),
                        "\(origin): the server sent \(sent) of \(size) bytes in the resumed run")
                } else {
                    // The others say what they sent in the second run.
                    let entries = await host.server.accessLog.entries(since: mark)
                    let sent = entries.filter { $0.method == "GET" }.compactMap(\.bytesSent).reduce(0, +)
                    #expect(
                        sent < Int64(size),
                        "\(origin): the server sent \(sent) of \(size) bytes in the resumed run:\n\(entries.map(\.description).joined(separator: "\n"))"
                    )
                }
            }
        }
    }
}
