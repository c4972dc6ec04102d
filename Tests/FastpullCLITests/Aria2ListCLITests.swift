import FastpullFixtures
import Foundation
import Testing

/// aria2's per-file option lines in an input file: `out=`, `dir=`, `header=`, `checksum=` apply to
/// their file alone; aria2's connection options are left to fastpull; any other key is an error.
@Suite("fastpull -i with aria2's per-file options")
struct Aria2ListCLITests {
    @Test func eachFileTakesItsOwnOptions() async throws {
        let open = try FixtureServer()
        var locked = FixtureServer.Configuration()
        locked.basicCredentials = ("ann", "pw")
        let guarded = try FixtureServer(locked)
        let folder = try ScratchFolders.make("fastpull-aria2-list").path
        let first = Data(FixtureContent.bytes(count: 3000, seed: 99))
        let second = Data(FixtureContent.bytes(count: 4000, seed: 100))
        try first.write(to: URL(fileURLWithPath: folder + "/expected"))
        let sha = try await CLIRunner.shell("sha256sum expected | cut -c1-64", in: folder).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let token = Data("ann:pw".utf8).base64EncodedString()
        let list = """
            \(open.url("/gen/3000?seed=99").absoluteString)
              out=renamed.bin
              dir=sub/folder
              checksum=sha-256=\(sha)
              split=16
              max-connection-per-server=4
            \(guarded.url("/gen/4000?seed=100").absoluteString)
            \theader=Authorization: Basic \(token)
              out=guarded.bin
            \(guarded.url("/gen/4000?seed=100&other=1").absoluteString)
              out=unguarded.bin

            """
        try list.write(toFile: folder + "/list.txt", atomically: true, encoding: .utf8)
        let result = try await CLIRunner.run(["-i", "list.txt", "-d", "out"], in: folder)
        // The third file has no header of its own: 401, and the exit code is its.
        #expect(result.status == 4, "\(result.stderr)")
        #expect(result.stderr.contains("HTTP 401"), "\(result.stderr)")
        #expect(FileManager.default.contents(atPath: folder + "/sub/folder/renamed.bin") == first)
        #expect(FileManager.default.contents(atPath: folder + "/out/guarded.bin") == second)
        #expect(!FileManager.default.fileExists(atPath: folder + "/out/unguarded.bin"))

        // A checksum= the file does not match fails it.
        let wrong = list.replacingOccurrences(of: sha, with: String(repeating: "0", count: 64))
            .replacingOccurrences(of: "dir=sub/folder", with: "dir=sub/other")
        try wrong.write(toFile: folder + "/wrong.txt", atomically: true, encoding: .utf8)
        let mismatch = try await CLIRunner.run(["-i", "wrong.txt", "-d", "again"], in: folder)
        #expect(mismatch.stderr.contains("[1/3] error: sha256 mismatch"), "\(mismatch.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder + "/sub/other/renamed.bin"))
    }

    @Test(arguments: [
        ("http://h.test/a\n  seed=1\n", "list.txt:2: aria2's option 'seed' is not supported in a list"),
        ("  out=x\nhttp://h.test/a\n", "list.txt:1: an option line ('out=x') with no URL line before it"),
        ("http://h.test/a x\n  out=y\n", "list.txt:2: a second output path (out=y)"),
        ("http://h.test/a\n  header=NoColon\n", "list.txt:2: header=: expected 'Name: value'"),
        ("http://h.test/a\n  checksum=sha-256=12\n", "list.txt:2: checksum=: a sha256 checksum is 64"),
    ])
    func aBadOptionLineIsAUsageErrorNamingIt(text: String, message: String) async throws {
        let folder = try ScratchFolders.make("fastpull-aria2-list-bad").path
        try text.write(toFile: folder + "/list.txt", atomically: true, encoding: .utf8)
        let result = try await CLIRunner.run(["-i", "list.txt"], in: folder)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("error: " + message), "\(result.stderr)")
    }
}
