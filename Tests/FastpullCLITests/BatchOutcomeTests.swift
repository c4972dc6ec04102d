import FastpullFixtures
import Foundation
import Testing

/// A batch says each outcome when it happens — a 404 is told while a slow file still downloads, not
/// after it — and a batch stopped by a signal counts its stopped files as stopped, not failed.
extension BatchCLITests {
    @Test func aFailureIsToldWhenItHappens() async throws {
        var slow = FixtureServer.Configuration()
        slow.totalRate = 1_000_000
        let slowServer = try FixtureServer(slow)
        let list =
            slowServer.url("/gen/\(2 << 20)?seed=21").absoluteString + " slow.bin\n"
            + server.url("/gen/1?status=404").absoluteString + " missing.bin\n"
        try list.write(toFile: folder + "/order.txt", atomically: true, encoding: .utf8)
        let result = try await CLIRunner.run(["-i", "order.txt", "-j", "2"], in: folder)
        #expect(result.status == 4, "\(result.stderr)")
        let told = try #require(result.stderr.range(of: "[2/2] error: HTTP 404"), "\(result.stderr)")
        let saved = try #require(result.stderr.range(of: "[1/2] saved"), "\(result.stderr)")
        #expect(told.lowerBound < saved.lowerBound, "the 404 came after the slow file: \(result.stderr)")
        #expect(
            result.stderr.components(separatedBy: "[2/2] error").count == 2, "said once: \(result.stderr)")
        #expect(result.stderr.contains("2 files: 1 saved, 1 failed; exit 4, the code of [2/2]"))
    }

    @Test func aStoppedBatchCountsStoppedNotFailed() async throws {
        var slow = FixtureServer.Configuration()
        slow.totalRate = 500_000
        let slowServer = try FixtureServer(slow)
        let urls = (0..<3).map { slowServer.url("/gen/\((4 << 20) + $0)?seed=\(30 + $0)").absoluteString }
        let (process, out, err) = try CLIRunner.start(["--json", "-j", "3", "-d", "stop"] + urls, in: folder)
        // Stopped once bytes flow: the first progress event.
        let flowing = await CLIRunner.offPool { () -> Bool in
            var seen = Data()
            while !String(decoding: seen, as: UTF8.self).contains(#""event":"progress""#) {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { return false }
                seen += chunk
            }
            return true
        }
        #expect(flowing)
        process.interrupt()
        let result = await CLIRunner.finish(process, out, err)
        #expect(result.status == 130, "\(result.stderr)")
        #expect(result.stderr.contains("3 stopped; exit 130, stopped by a signal"), "\(result.stderr)")
        #expect(!result.stderr.contains("failed"), "\(result.stderr)")
    }
}
