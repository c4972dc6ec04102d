import FastpullFixtures
import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine

/// `--auto-rename` (``BatchOptions/ExistingFiles/rename``) beside a file that is there: a `name.1.part`
/// left by an earlier run is this download's only when its journal names this download, the URL and
/// the part of the file it fetches, as the resume itself compares them.
final class RenameResumeTests {
    /// A folder of its own for each test, removed after it.
    let folder: URL

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "fastpull-rename-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: folder) }

    /// A durable journal beside `part` for a whole download of `url` of `size` bytes, none written.
    func writeJournal(beside part: String, naming url: URL, size: Int64) throws {
        let journal = Journal(
            url: Journal.downloadURL(url, byteRange: nil), finalURL: url.absoluteString, size: size,
            checksums: [], segments: [.init(start: 0, end: size, durable: 0, written: 0)])
        try JournalStore(partPath: part).write(journal, durably: true)
    }

    /// A `.part` whose journal is a whole download of the URL: a `--range` download of the same URL
    /// saves beside it as `name.2` and leaves it alone (it took it, threw its bytes away, and said
    /// "belongs to …, not this URL"); a download of the whole URL takes `name.1`.
    @Test(arguments: [true, false])
    func aPartIsTakenOnlyByTheDownloadItsJournalNames(ranged: Bool) async throws {
        let server = try FixtureServer()
        let url = server.url("/gen/300000?seed=9")
        let file = folder.appendingPathComponent("a.bin")
        try Data("there".utf8).write(to: file)
        let part = folder.appendingPathComponent("a.bin.1.part").path
        let kept = Data(repeating: 7, count: 1000)
        try kept.write(to: URL(fileURLWithPath: part))
        try writeJournal(beside: part, naming: url, size: 300_000)
        var configuration = Configuration()
        if ranged { configuration.request.byteRange = .from(1000, through: 1999) }
        let outcomes = await Fastpull.download(
            [BatchItem(url: url, destination: file)], configuration: configuration,
            options: BatchOptions(existingFiles: .rename))
        let error = outcomes.first?.error.map { "\($0)" } ?? ""
        let report = try #require(outcomes.first?.report, "\(error)")
        let expected = ranged ? "a.bin.2" : "a.bin.1"
        #expect(report.outputPath.hasSuffix(expected), "\(report.outputPath)")
        #expect(try Data(contentsOf: file) == Data("there".utf8))
        if ranged {
            #expect(FileManager.default.contents(atPath: part) == kept)
        }
    }

    /// Sixteen batches at once (as sixteen `fastpull --auto-rename` runs), each saving the same URL beside
    /// the same file: each takes a name of its own (`a.bin.1` … `a.bin.16`), none fails on a name
    /// another took at the same moment, and each file holds the URL's bytes.
    @Test func concurrentRenamesEachTakeANameOfTheirOwn() async throws {
        let server = try FixtureServer()
        let url = server.url("/gen/200000?seed=4")
        let file = folder.appendingPathComponent("a.bin")
        try Data("there".utf8).write(to: file)
        let runs = 16
        let outcomes = await withTaskGroup(of: BatchOutcome?.self) { group in
            for _ in 0..<runs {
                group.addTask {
                    await Fastpull.download(
                        [BatchItem(url: url, destination: file)],
                        options: BatchOptions(existingFiles: .rename)
                    ).first
                }
            }
            var all: [BatchOutcome?] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        let errors = outcomes.compactMap { $0?.error.map { "\($0)" } }
        #expect(errors.isEmpty, "\(errors)")
        let names = Set(outcomes.compactMap { $0?.report?.outputPath })
        #expect(names == Set((1...runs).map { file.path + ".\($0)" }), "\(names.sorted())")
        let expected = Data(FixtureContent.bytes(count: 200_000, seed: 4))
        for name in names {
            #expect(FileManager.default.contents(atPath: name) == expected, "\(name)")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
            $0.hasSuffix(".part")
        }
        #expect(left.isEmpty, "\(left)")
        #expect(try Data(contentsOf: file) == Data("there".utf8))
    }

    /// A file that appears at the name while the download runs (another run finished first): the
    /// verified file goes beside it, not left in its `.part` with a failure, passing a folder at
    /// `a.bin.1` by (`a.bin.2`); the file that appeared is left alone.
    @Test func aNameTakenDuringTheDownloadSendsTheFileBesideIt() async throws {
        // A cap on the server's total: the download takes about four seconds however many
        // connections it opens, so the file appears while it runs (a test process running hundreds
        // of tests at once has delayed this one's look by seconds).
        var capped = FixtureServer.Configuration()
        capped.totalRate = 500_000
        let server = try FixtureServer(capped)
        let size = 2 << 20
        let url = server.url("/gen/\(size)?seed=6")
        let file = folder.appendingPathComponent("a.bin")
        let run = Task {
            await Fastpull.download(
                [BatchItem(url: url, destination: file)], options: BatchOptions(existingFiles: .rename)
            ).first
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while server.stats.bodyBytesSent < 64 << 10, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        try Data("mine".utf8).write(to: file)
        // And a folder where the first free name would be: it is passed by, not failed on.
        try FileManager.default.createDirectory(atPath: file.path + ".1", withIntermediateDirectories: false)
        let outcome = await run.value
        let error = outcome?.error.map { "\($0)" } ?? ""
        let report = try #require(outcome?.report, "\(error)")
        #expect(report.outputPath == file.path + ".2")
        #expect(try Data(contentsOf: file) == Data("mine".utf8))
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: file.path + ".2"))
                == Data(FixtureContent.bytes(count: size, seed: 6)))
        #expect(!FileManager.default.fileExists(atPath: file.path + ".part"))
    }

    /// A resumable `a.bin.1.part` that something else holds a shared lock on (a backup, `flock -s`):
    /// the rename passes it by to `a.bin.2`, once, instead of trying it again and again (a lock test
    /// that allowed a shared holder took it for free, and the claim's exclusive lock was refused).
    @Test func aPartHeldWithASharedLockIsPassedBy() async throws {
        let server = try FixtureServer()
        let url = server.url("/gen/300000?seed=8")
        let file = folder.appendingPathComponent("a.bin")
        try Data("there".utf8).write(to: file)
        let part = folder.appendingPathComponent("a.bin.1.part").path
        try Data(repeating: 7, count: 1000).write(to: URL(fileURLWithPath: part))
        try writeJournal(beside: part, naming: url, size: 300_000)
        let holder = open(part, O_RDONLY)
        defer { close(holder) }
        #expect(flock(holder, LOCK_SH) == 0)
        let outcomes = await Fastpull.download(
            [BatchItem(url: url, destination: file)], options: BatchOptions(existingFiles: .rename))
        let error = outcomes.first?.error.map { "\($0)" } ?? ""
        let report = try #require(outcomes.first?.report, "\(error)")
        #expect(report.outputPath == file.path + ".2")
        #expect(FileManager.default.contents(atPath: part) == Data(repeating: 7, count: 1000))
    }

    /// A name whose `.part` cannot be made for a reason other than being taken (here: too long for
    /// the file system) fails the item with that reason, at once, instead of trying the next number
    /// for ever.
    @Test func aNameThatCannotBeMadeFailsSayingWhy() async throws {
        let server = try FixtureServer()
        let file = folder.appendingPathComponent(String(repeating: "n", count: 251))
        try Data("there".utf8).write(to: file)
        let outcomes = await Fastpull.download(
            [BatchItem(url: server.url("/gen/1000?seed=1"), destination: file)],
            options: BatchOptions(existingFiles: .rename))
        let error = try #require(outcomes.first?.error)
        #expect(error.message.contains("bytes"), "\(error)")
        #expect(try Data(contentsOf: file) == Data("there".utf8))
    }
}
