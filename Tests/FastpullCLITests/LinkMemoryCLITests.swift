import FastpullFixtures
import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine

/// A run resumed soon after starts where the one before was: the journal remembers how many
/// connections it held (``LinkMemory``), and the same command again opens that many at once instead of
/// ramping from four. With the built binary, in a process of its own: the controller judges the CPU by
/// its process's time, which in the test process is hundreds of tests'.
@Suite("A resumed run remembers its link", .timeLimit(.minutes(2)))
struct LinkMemoryCLITests {
    let server: FixtureServer
    let folder: String

    init() throws {
        server = try FixtureServer()
        folder = try ScratchFolders.make("fastpull-link").path
    }

    /// Each connection is held to 1 MB/s, so the first run ramps to its maximum, eight, and holds
    /// there; it is interrupted once its live journal remembers that, and the run after starts with
    /// eight.
    @Test func theSameCommandAgainStartsWithTheConnectionsTheLastRunHeld() async throws {
        let size = 24 << 20
        let url = server.url("/gen/\(size)?seed=4&rate=1000000").absoluteString
        let arguments = ["--json", "--max-connections", "8", url, "-o", "held.bin"]
        let (first, out, err) = try CLIRunner.start(arguments, in: folder)
        let live = folder + "/held.bin.part.fastpull-live"
        let remembered = await CLIRunner.offPool {
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                if let data = FileManager.default.contents(atPath: live),
                    (try? Journal.decode(data))?.link != nil
                {
                    return true
                }
                usleep(2000)
            }
            return false
        }
        first.interrupt()
        let interrupted = await CLIRunner.finish(first, out, err)
        try #require(remembered, "the journal never remembered the link: \(interrupted.stderr)")
        #expect(interrupted.status == 130, "\(interrupted.stderr)")
        let journal = try Journal.decode(
            try Data(contentsOf: URL(fileURLWithPath: folder + "/held.bin.part.fastpull")))
        let link = try #require(journal.link)
        #expect(link.connections == 8, "\(link)")
        #expect(link.bytesPerSecond > 0)

        let second = try await CLIRunner.run(arguments, in: folder)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(
            FileManager.default.contents(atPath: folder + "/held.bin")
                == Data(FixtureContent.bytes(count: size, seed: 4)))
        let counts = second.connectionCounts
        #expect(counts.first == 8, "the resumed run's counts: \(counts)")
        #expect(second.stdout.contains("\"event\":\"resumed\""), "\(second.stdout.prefix(2000))")
    }
}
