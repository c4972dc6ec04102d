import FastpullFixtures
import Foundation
import Testing

/// `--range` against every real origin server: the output is exactly the part asked for, fetched as
/// ranges over several connections, from servers whose Content-Range counts from the file's start.
@Suite("A part of a file from real origin servers")
struct RangeOriginTests {
    @Test("START-END and -N", arguments: Origin.allCases)
    func part(origin: Origin) async throws {
        let size = 8 * TestContent.mebibyte
        try await origin.serve { host in
            try await InteropFolder.with("range-\(origin.rawValue)") { folder in
                let data = await TestContent.random(size, seed: TestContent.seed("range", origin.rawValue))
                let url = try await host.publish("big.bin", data)
                let middle = folder + "/middle.bin"
                let result = try await FastpullProcess.run(
                    [url, "-o", middle, "-r", "1000001-5000000", "-n", "4", "--min-segment", "256K", "-q"],
                    in: folder)
                #expect(result.status == 0, "\(origin): \(result)")
                #expect(
                    FileManager.default.contents(atPath: middle) == data[1_000_001...5_000_000], "\(origin)")

                let tail = folder + "/tail.bin"
                let last = try await FastpullProcess.run([url, "-o", tail, "-r", "-70000", "-q"], in: folder)
                #expect(last.status == 0, "\(origin): \(last)")
                #expect(FileManager.default.contents(atPath: tail) == data[(size - 70000)...], "\(origin)")
            }
        }
    }
}
