import FastpullFixtures
import Foundation
import Testing

/// The `swift` driver on PATH, if any.
private let swiftPath: String? = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
    .map { "\($0)/swift" }.first { FileManager.default.isExecutableFile(atPath: $0) }

/// The `fetch-artifacts` command plugin, run for real: a copy of Fixtures/plugin-package (its
/// dependency pointed at this checkout, its artifacts.json at a fixture server) runs
/// `swift package --allow-writing-to-package-directory --allow-network-connections all fetch-artifacts`,
/// which builds `fastpull` for the package and fetches and verifies the artifacts. On Linux command
/// plugins are not sandboxed, so the network permission is only checked by SwiftPM's flag.
@Suite("SwiftPM fetch-artifacts plugin", .enabled(if: swiftPath != nil, "the swift driver is not on PATH"))
struct PluginTests {
    /// This checkout's root, found from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs `swift` with `arguments` in `folder`, off the cooperative pool.
    static func runSwift(_ arguments: [String], in folder: URL) async throws -> CLIRunner.Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: swiftPath!)
        process.arguments = arguments
        process.currentDirectoryURL = folder
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return await CLIRunner.finish(process, out, err)
    }

    @Test(.timeLimit(.minutes(20)))
    func fetchArtifactsDownloadsVerifiesAndKeeps() async throws {
        let server = try FixtureServer()
        let work = FileManager.default.temporaryDirectory.appendingPathComponent(
            "fastpull-plugin-\(UUID().uuidString)")
        let package = work.appendingPathComponent("plugin-package")
        defer { try? FileManager.default.removeItem(at: work) }
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: Self.root.appendingPathComponent("Fixtures/plugin-package"), to: package)
        let manifest = package.appendingPathComponent("Package.swift")
        let text = try String(contentsOf: manifest, encoding: .utf8)
            .replacingOccurrences(of: "path: \"../..\"", with: "path: \"\(Self.root.path)\"")
        try text.write(to: manifest, atomically: true, encoding: .utf8)
        let artifacts = package.appendingPathComponent("artifacts.json")
        let list = try String(contentsOf: artifacts, encoding: .utf8)
            .replacingOccurrences(of: "http://127.0.0.1:8080", with: server.baseURL.absoluteString)
        try list.write(to: artifacts, atomically: true, encoding: .utf8)

        let arguments = [
            // One compile job: the other suites' timing-sensitive downloads share these two cores.
            "package", "--jobs", "1", "--scratch-path", work.appendingPathComponent("build").path,
            "--allow-writing-to-package-directory", "--allow-network-connections", "all", "fetch-artifacts",
        ]
        let first = try await Self.runSwift(arguments, in: package)
        #expect(first.status == 0, "\(first.stdout)\n\(first.stderr)")
        let model = FileManager.default.contents(
            atPath: package.appendingPathComponent("Artifacts/model.bin").path)
        let table = FileManager.default.contents(
            atPath: package.appendingPathComponent("Artifacts/data/table.bin").path)
        #expect(model == Data(FixtureContent.bytes(count: 1_048_576, seed: 1)))
        #expect(table == Data(FixtureContent.bytes(count: 300_000, seed: 2)))
        // What fastpull prints reaches the plugin's own output, which SwiftPM may relay on either stream.
        #expect(
            (first.stdout + first.stderr).contains("2 files: 2 saved"), "\(first.stdout)\n\(first.stderr)")

        // A second run finds both in place and verified, and asks the server for nothing.
        server.resetStats()
        let second = try await Self.runSwift(arguments, in: package)
        #expect(second.status == 0, "\(second.stderr)")
        #expect((second.stdout + second.stderr).contains("2 already here"), "\(second.stderr)")
        #expect(server.stats.requests == 0)

        // A wrong digest fails the command, names the artifact, and leaves nothing at its path.
        try FileManager.default.removeItem(at: package.appendingPathComponent("Artifacts/model.bin"))
        let wrong = list.replacingOccurrences(
            of: "27042b5d3016d93b890e5ed9fffcabb3cd1f9788f41165cb36594bb6f00a8524",
            with: String(repeating: "0", count: 64))
        try wrong.write(to: artifacts, atomically: true, encoding: .utf8)
        var failed = try await Self.runSwift(arguments, in: package)
        // SwiftPM itself crashed once while relaying the plugin's output (a segfault in its dispatch
        // event loop, fastpull's exit status 6 reported, its messages lost): that run says nothing of
        // fastpull, so it is run once more.
        if (failed.stdout + failed.stderr).contains("Thread 0 \"swift-package\"") {
            failed = try await Self.runSwift(arguments, in: package)
        }
        #expect(failed.status != 0)
        #expect((failed.stdout + failed.stderr).contains("sha256 mismatch"), "\(failed.stderr)")
        #expect(
            !FileManager.default.fileExists(
                atPath: package.appendingPathComponent("Artifacts/model.bin").path))
    }
}
