import FastpullFixtures
import Foundation
import Testing

@testable import FastpullHTTP

/// Whole downloads from every origin server: the bytes must be identical, for empty, tiny, odd-sized and
/// large files, and a large file must really be fetched as ranges over several connections.
@Suite("Downloads from real origin servers")
struct OriginDownloadTests {
    static let sizes = [0, 1, TestContent.mebibyte + 1, 64 * TestContent.mebibyte]

    @Test("byte-identical download", arguments: Origin.allCases, sizes)
    func identical(origin: Origin, size: Int) async throws {
        try await origin.serve { host in
            try await InteropFolder.with("identical-\(origin.rawValue)") { folder in
                let data = await TestContent.random(
                    size, seed: TestContent.seed("identical", origin.rawValue, "\(size)"))
                let url = try await host.publish("file.bin", data)
                let output = folder + "/file.bin"
                let result = try await FastpullProcess.run([url, "-o", output, "-q"], in: folder)
                #expect(result.status == 0, "\(origin) \(TestContent.describe(size)): \(result)")
                let comparison = await InteropFolder.compare(output, to: data)
                #expect(comparison == .identical, "\(origin) \(TestContent.describe(size)): \(comparison)")
            }
        }
    }

    @Test("64 MiB with -n 4 is fetched as ranges over several connections", arguments: Origin.allCases)
    func parallelRanges(origin: Origin) async throws {
        let size = 64 * TestContent.mebibyte
        try await origin.serve { host in
            try await InteropFolder.with("ranges-\(origin.rawValue)") { folder in
                let data = await TestContent.random(size, seed: TestContent.seed("ranges", origin.rawValue))
                var url = try await host.publish("big.bin", data)
                // moto logs neither Range, bytes nor connections: a relay in front of it records the
                // requests as they were sent, and counts the connections (moto closes each after one).
                var relay: RecordingRelay?
                if let s3 = host as? S3Host {
                    (url, relay) = try s3.throughRelay("big.bin")
                }
                defer { relay?.stop() }
                let output = folder + "/big.bin"
                let result = try await FastpullProcess.run([url, "-o", output, "-n", "4", "-q"], in: folder)
                #expect(result.status == 0, "\(origin): \(result)")
                let comparison = await InteropFolder.compare(output, to: data)
                #expect(comparison == .identical, "\(origin): \(comparison)")

                let log = await host.server.accessLog.entries()
                let gets = log.filter { $0.method == "GET" && $0.path.hasSuffix("/big.bin") }
                let partial = gets.filter { $0.status == 206 }
                let summary = gets.map(\.description).joined(separator: "\n")
                #expect(
                    !gets.contains { $0.status == 200 },
                    "\(origin): a GET was answered with the whole file (200):\n\(summary)")
                if let relay {
                    let heads = Self.requestHeads(relay.clientText)
                    let ranged = heads.filter {
                        $0.hasPrefix("GET ") && $0.lowercased().contains("\r\nrange: bytes=")
                    }
                    // Every GET through the relay asked for a range, and the relay saw every GET moto
                    // answered: moto logs an answer once it is sent, so one the download stopped
                    // reading when the last bytes came in on another connection is not in its log.
                    #expect(
                        ranged.count == heads.count { $0.hasPrefix("GET ") } && ranged.count >= gets.count,
                        "\(origin): \(ranged.count) ranged GETs through the relay, \(gets.count) in moto's log:\n\(heads.joined(separator: "\n\n"))"
                    )
                    // moto's log misses answers the download stopped reading: the relay counts the
                    // ranges asked (under load the first connection once read nearly the whole file
                    // while the others' answers were still on their way, and moto logged one GET).
                    #expect(ranged.count >= 4, "\(origin): \(ranged.count) ranged GETs with -n 4")
                    #expect(
                        relay.connectionCount >= 4,
                        "\(origin): \(relay.connectionCount) connections with -n 4")
                } else {
                    #expect(
                        partial.count >= 4,
                        "\(origin): \(partial.count) 206 responses for 64 MiB with -n 4:\n\(summary)")
                    #expect(
                        gets.allSatisfy { $0.range != nil }, "\(origin): a GET without Range:\n\(summary)")
                    let connections = Set(partial.compactMap(\.connection))
                    #expect(
                        connections.count >= 4,
                        "\(origin): 206 responses came over \(connections.count) connections with -n 4:\n\(summary)"
                    )
                    let sent = partial.compactMap(\.bytesSent).reduce(0, +)
                    #expect(sent >= Int64(size), "\(origin): the 206 responses sent \(sent) of \(size) bytes")
                }
            }
        }
    }

    /// Requests sent ahead (HTTP/1.1 pipelining, `--pipelining on`): 16 MiB over two connections at
    /// 8 MiB/s in all, in pieces of 8 MiB, so each window (a second of a connection's speed) is
    /// followed by more of its piece, asked for before its answer ends. Every origin gives the same
    /// bytes. The file servers answer the requests sent ahead on the connection they came on; moto,
    /// which closes a connection after each answer, either says so (nothing is sent ahead) or leaves
    /// one unanswered, and the download sends no more.
    @Test("requests sent ahead", arguments: Origin.allCases)
    func pipelined(origin: Origin) async throws {
        let size = 16 * TestContent.mebibyte
        try await origin.serve { host in
            try await InteropFolder.with("pipelined-\(origin.rawValue)") { folder in
                let data = await TestContent.random(
                    size, seed: TestContent.seed("pipelined", origin.rawValue))
                let url = try await host.publish("big.bin", data)
                let output = folder + "/big.bin"
                let trace = folder + "/trace.jsonl"
                let result = try await FastpullProcess.run(
                    [
                        url, "-o", output, "-q", "-n", "2", "--min-segment", "8MiB", "--limit-rate", "8MiB/s",
                        "--pipelining", "on", "--trace", trace,
                    ], in: folder)
                #expect(result.status == 0, "\(origin): \(result)")
                let comparison = await InteropFolder.compare(output, to: data)
                #expect(comparison == .identical, "\(origin): \(comparison)")
                let records = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n")
                    .compactMap {
                        try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
                    }
                func events(_ kind: String) -> [[String: Any]] {
                    records.filter { $0["event"] as? String == kind }
                }
                let summary = records.filter { $0["event"] as? String != "progress" }.map { "\($0)" }
                    .joined(separator: "\n")
                let sent = events("request ahead").count
                let stopped = events("ahead stopped").count
                if origin == .s3 {
                    #expect(sent == 0 || stopped >= 1, "\(origin):\n\(summary)")
                } else {
                    // Windows read from answers to requests sent ahead: bytes came from each such
                    // answer. A window may end before its answer does (`cut`) when the other
                    // connection takes over its tail near the end, so the bytes, not the end, count.
                    let aheadStarts = Set(
                        records.filter {
                            $0["event"] as? String == "window" && $0["how"] as? String == "ahead"
                        }
                        .compactMap { $0["start"] as? Int })
                    let answered = (events("done") + events("cut")).filter {
                        aheadStarts.contains($0["start"] as? Int ?? -1) && ($0["bytes"] as? Int ?? 0) > 0
                    }
                    #expect(sent >= 1 && answered.count >= 1, "\(origin):\n\(summary)")
                    #expect(stopped == 0, "\(origin):\n\(summary)")
                }
            }
        }
    }

    /// The request heads in what clients sent (each up to its blank line), in order.
    static func requestHeads(_ text: String) -> [String] {
        text.components(separatedBy: "\r\n\r\n").filter {
            $0.hasPrefix("GET ") || $0.hasPrefix("HEAD ")
        }
    }
}
