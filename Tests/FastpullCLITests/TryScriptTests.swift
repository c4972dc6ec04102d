import Foundation
import Testing

/// `scripts/try.sh`, the README's first command, run as a new user would (with the build this suite
/// already made): it serves 256 MiB on loopback, pulls it with the progress display, keeps the file
/// and says where it is. Before: the path it printed was deleted as it exited.
@Suite("The first command: scripts/try.sh")
struct TryScriptTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    @Test func itDownloadsAndKeepsTheFileWhereItSays() async throws {
        let temporary = FileManager.default.temporaryDirectory.appendingPathComponent(
            "fastpull-try-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: temporary) }
        let script = Self.repository.appendingPathComponent("scripts/try.sh").path
        let result = try await CLIRunner.shell(
            "FASTPULL_TRY_BIN='\(CLIRunner.binaryFolder.path)' TMPDIR='\(temporary.path)' '\(script)'",
            in: temporary.path)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let saved = temporary.appendingPathComponent("fastpull-try/256M.bin").path
        #expect(result.stdout.contains("downloading 256 MiB from http://127.0.0.1:"), "\(result.stdout)")
        #expect(result.stdout.contains("the file is \(saved);"), "\(result.stdout)")
        #expect(result.stderr.contains("saving to \(saved) (256.0 MiB)"), "\(result.stderr)")
        #expect(result.stderr.contains("saved "), "\(result.stderr)")
        let size = try FileManager.default.attributesOfItem(atPath: saved)[.size] as? Int
        #expect(size == 256 << 20)
        // The server it started is gone with it: its port refuses.
        let base = try #require(
            result.stdout.split(separator: "\n").first { $0.hasPrefix("downloading") }?
                .split(separator: " ").first { $0.hasPrefix("http://") })
        let probe = try await CLIRunner.shell(
            "curl -sS --max-time 5 -o /dev/null '\(base)/gen/1'", in: temporary.path)
        #expect(probe.status == 7, "curl: \(probe.status) \(probe.stderr)")
    }
}
