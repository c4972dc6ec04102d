import FastpullFixtures
import Foundation
import Testing

/// `--resolve`, `-4` and `-6`: which addresses a download connects to.
@Suite("fastpull --resolve, -4, -6")
struct AddressingCLITests {
    /// A name not in DNS, pinned to the fixture server's address: the download goes there (and
    /// fails without the pin: the name does not resolve).
    @Test func aPinnedNameConnectsToItsAddress() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-resolve")
        let port = workspace.server.port
        let url = "http://files.test:\(port)/gen/5000?seed=61"
        let pinned = try await CLIRunner.run(
            [url, "-o", "a.bin", "--resolve", "files.test:\(port):127.0.0.1"], in: workspace.folder)
        #expect(pinned.status == 0, "\(pinned.stderr)")
        #expect(
            FileManager.default.contents(atPath: workspace.folder + "/a.bin")
                == Data(FixtureContent.bytes(count: 5000, seed: 61)))
        let unpinned = try await CLIRunner.run([url, "-o", "b.bin"], in: workspace.folder)
        #expect(unpinned.status == 3, "\(unpinned.stderr)")
        // A pin for another port leaves the name to the resolver.
        let otherPort = try await CLIRunner.run(
            [url, "-o", "c.bin", "--resolve", "files.test:\(port + 1):127.0.0.1"], in: workspace.folder)
        #expect(otherPort.status == 3, "\(otherPort.stderr)")
        // A pin of the other family than -6 allows leaves nothing to connect to.
        let wrongFamily = try await CLIRunner.run(
            [url, "-o", "d.bin", "--resolve", "files.test:\(port):127.0.0.1", "-6"], in: workspace.folder)
        #expect(wrongFamily.status == 3, "\(wrongFamily.stderr)")
        #expect(
            wrongFamily.stderr.contains("no IPv6 address among those it is pinned to"),
            "\(wrongFamily.stderr)")
    }

    /// `-4` connects to the server on 127.0.0.1; `-6` finds no IPv6 address there.
    @Test func oneFamilyOnly() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-family")
        let url = workspace.server.url("/gen/3000?seed=62").absoluteString
        let four = try await CLIRunner.run([url, "-o", "a.bin", "-4"], in: workspace.folder)
        #expect(four.status == 0, "\(four.stderr)")
        let six = try await CLIRunner.run([url, "-o", "b.bin", "--ipv6"], in: workspace.folder)
        #expect(six.status == 3, "\(six.stderr)")
        #expect(six.stderr.contains("no IPv6 address"), "\(six.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.folder + "/b.bin"))
    }

    @Test(arguments: [
        ["--resolve", "files.test:80"], ["--resolve", "files.test:x:127.0.0.1"],
        ["--resolve", "files.test:80:not-an-address"], ["--resolve", ":80:127.0.0.1"], ["-4", "-6"],
    ])
    func badAddressingIsAUsageError(arguments: [String]) async throws {
        let folder = try ScratchFolders.make("fastpull-resolve-usage").path
        let result = try await CLIRunner.run(["http://files.test/x"] + arguments, in: folder)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(arguments[0] == "-4" ? "-4 and -6" : "--resolve"), "\(result.stderr)")
    }
}
