import FastpullFixtures
import Foundation
import Testing

/// A curl habit typed at fastpull: `-fsSL -O` with wget's `-P` saves the file, quietly, where `-P` says.
@Suite("Other tools' spellings on the command line")
struct OptionAliasesCLITests {
    @Test func curlAndWgetHabitsWork() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-aliases")
        let url = workspace.server.url("/gen/65536?seed=14").absoluteString
        let result = try await CLIRunner.run(
            ["-fsSL", "-O", url, "-P", "sub", "--retry", "2"], in: workspace.folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty, "quiet: \(result.stderr)")
        #expect(
            FileManager.default.contents(atPath: workspace.folder + "/sub/65536")
                == Data(FixtureContent.bytes(count: 65536, seed: 14)))
        let refused = try await CLIRunner.run(["-nc", url], in: workspace.folder)
        #expect(refused.status == 2)
        #expect(
            refused.stderr.contains("never replaces an existing file without --force"), "\(refused.stderr)")
    }
}
