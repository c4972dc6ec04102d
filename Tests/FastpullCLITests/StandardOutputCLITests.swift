import FastpullFixtures
import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine

/// `-o -`: the file goes to standard output, a pipe this test holds, in order.
@Suite("fastpull -o -: standard output")
struct StandardOutputCLITests {
    static let size = 24 << 20
    static let content = Data(FixtureContent.bytes(count: size, seed: 7))

    /// What a run that wrote to standard output left: the bytes, its messages and its exit status.
    struct Outcome {
        var bytes: Data
        var stderr: String
        var status: Int32
    }

    /// Starts `fastpull` with standard output on a pipe, takes nothing from it for `pause`, then
    /// reads it to its end.
    static func run(_ arguments: [String], readingAfter pause: Duration = .zero) async throws -> Outcome {
        let folder = try ScratchFolders.make("fastpull-stdout").path
        let (process, out, err) = try CLIRunner.start(arguments, in: folder)
        // The reader that pauses is the scenario itself: nothing here waits for anything else.
        if pause > .zero { try await Task.sleep(for: pause) }
        return await CLIRunner.offPool {
            let bytes = out.fileHandleForReading.readDataToEndOfFile()
            let stderr = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return Outcome(
                bytes: bytes, stderr: String(decoding: stderr, as: UTF8.self),
                status: process.terminationStatus)
        }
    }

    /// A reader that takes nothing for three times the speed time, then everything: the server was
    /// never slow, so the download waits for it and ends whole (before: exit 3, "came slower than
    /// 1.0 KiB/s", the stream cut). Through the ring of a segmented download, and straight from a
    /// server without ranges.
    @Test(arguments: ["", "&no-ranges=1"])
    func aReaderThatPausesIsNoSlowServer(_ query: String) async throws {
        let server = try FixtureServer()
        let url = server.url("/gen/\(Self.size)?seed=7\(query)").absoluteString
        let outcome = try await Self.run(
            [url, "-o", "-", "--speed-limit", "1K/s", "--speed-time", "1"], readingAfter: .seconds(3))
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.bytes.count == Self.size)
        // A Bool: a failed `==` of two 24 MiB values has Swift Testing work out their difference.
        let same = outcome.bytes == Self.content
        #expect(same)
    }

    /// A server that answers a range with the whole file once bytes went out (its ranges start past
    /// the ring, so the first bytes are out before any is asked for): the rest comes from that
    /// answer, its first bytes dropped, and the whole stream verifies against a checksum of the file
    /// (before: exit 4, naming "a request for bytes 0-25165823", which was never sent).
    @Test func aWholeFileAnswerAfterBytesWentOutIsReadOnFromWhereTheyStopped() async throws {
        let server = try FixtureServer()
        // Larger than the ring, so that ranges start past it.
        let size = OrderedOutput.defaultCapacity + (8 << 20)
        let content = Data(FixtureContent.bytes(count: size, seed: 7))
        let url = server.url("/gen/\(size)?seed=7&whole-from=\(OrderedOutput.defaultCapacity)")
        let sha256 = Digest.hex(Digest.compute(.sha256, of: Array(content)))
        let outcome = try await Self.run([url.absoluteString, "-o", "-", "--checksum", "sha256=\(sha256)"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.bytes.count == size)
        let same = outcome.bytes == content
        #expect(same)
        #expect(
            outcome.stderr.contains(
                "answered a range request with the whole file; the rest comes from that answer, after its first"
            ),
            "\(outcome.stderr)")
    }
}
