import FastpullFixtures
import Foundation
import Testing

@testable import FastpullHTTP

/// A fleet pulling one file through a shared cache: nginx in front of the origin with `slice` and
/// `proxy_cache_lock` (the README's recipe), and four `fastpull` processes with default settings started
/// together. The origin must send about one copy of the file, and every machine must get it whole.
@Suite("A fleet behind a shared cache")
struct FleetCacheTests {
    static let size = 64 * TestContent.mebibyte
    static let machines = 4

    @Test("four pulls at once through slice and cache lock cost the origin one copy")
    func fourPullsCostOneCopy() async throws {
        let data = await TestContent.random(Self.size, seed: TestContent.seed("fleet cache"))
        try await Origin.nginx.serve { origin in
            _ = try await origin.publish("weights.bin", data)
            let cache = try await NginxCache.start(options: .init(originPort: origin.server.port))
            try await cache.run { cache in
                try await InteropFolder.with("fleet") { folder in
                    let url = cache.baseURL + "/weights.bin"
                    // Every process starts before any is waited for: the four pull at the same time.
                    let pulls = try (0..<Self.machines).map { machine in
                        try FastpullProcess(
                            [url, "-o", folder + "/weights-\(machine).bin", "-q"], in: folder)
                    }
                    for (machine, pull) in pulls.enumerated() {
                        let result = await pull.finished()
                        #expect(result.status == 0, "machine \(machine): \(result)")
                        let comparison = await InteropFolder.compare(
                            folder + "/weights-\(machine).bin", to: data)
                        #expect(comparison == .identical, "machine \(machine): \(comparison)")
                    }

                    let fetched = await origin.server.accessLog.entries().filter { $0.method == "GET" }
                    let sent = fetched.compactMap(\.bytesSent).reduce(0, +)
                    let bound = Int64(Double(Self.size) * 1.1)
                    let summary = fetched.map(\.description).joined(separator: "\n")
                    print(
                        "fleet cache: the origin sent \(sent) bytes in \(fetched.count) GETs for \(Self.machines) "
                            + "pulls of \(Self.size) bytes (\(String(format: "%.3f", Double(sent) / Double(Self.size)))×)"
                    )
                    #expect(sent <= bound, "the origin sent \(sent) bytes, over \(bound):\n\(summary)")
                    #expect(
                        sent >= Int64(Self.size), "the origin's log misses bytes: \(sent) of \(Self.size)")
                    // The cache asked for slices, each a whole aligned MiB (the last one to the end).
                    let unaligned = fetched.filter { !Self.isSlice($0.range) }
                    #expect(unaligned.isEmpty, "the origin got requests other than slices:\n\(summary)")
                }
            }
        }
    }

    /// Whether `range` is `bytes=S-E` with S a multiple of 1 MiB and E the end of S's mebibyte
    /// (nginx asks for a whole slice even where the file ends sooner).
    static func isSlice(_ range: String?) -> Bool {
        guard let range, range.hasPrefix("bytes=") else { return false }
        let bounds = range.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let start = Int(bounds[0]), let end = Int(bounds[1]) else { return false }
        return start % TestContent.mebibyte == 0 && end == start + TestContent.mebibyte - 1
    }
}
