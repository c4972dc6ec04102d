import FastpullFixtures
import Foundation
import Testing

@testable import Fastpull
@testable import FastpullManager

/// The queue that runs the list through a FastpullClient, against the fixture server: at most its
/// limit at once, a pause that is in the list at once and stops the transfer, a failure recorded with
/// its reason, and a restart that resumes what was active.
final class DownloadQueueTests {
    let folder: URL
    let server: FixtureServer
    var listPath: String { folder.appendingPathComponent("list.sqlite").path }

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "fastpull-queue-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // A cap on the server's total: how long a transfer runs does not depend on how many
        // connections the count reaches, so a pause or a change meant for a running transfer meets one.
        var capped = FixtureServer.Configuration()
        capped.totalRate = 2_000_000
        server = try FixtureServer(capped)
    }

    deinit { try? FileManager.default.removeItem(at: folder) }

    /// The bytes `/gen/<size>?seed=<seed>` serves.
    func expected(_ size: Int, seed: UInt64) -> Data { Data(FixtureContent.bytes(count: size, seed: seed)) }

    @Test func itRunsAtMostItsLimitAndFinishesEveryItem() async throws {
        let queue = DownloadQueue(
            list: try DownloadList(path: listPath), client: FastpullClient(), maximumActive: 2)
        var gids: [String] = []
        for seed in 1...3 {
            let url = server.url("/gen/\(2 << 20)?seed=\(seed)&rate=4000000").absoluteString
            gids.append(try queue.add(uris: [url], directory: folder.path, outputName: "f\(seed).bin").gid)
        }
        // Two run, the third waits for a place.
        #expect(try queue.list.downloads([.active]).map(\.gid) == Array(gids.prefix(2)))
        #expect(try queue.list.downloads([.waiting]).map(\.gid) == [gids[2]])
        #expect(try await waitFor { try queue.list.downloads([.complete]).count == 3 })
        await queue.waitUntilIdle()
        for seed in 1...3 {
            #expect(
                try Data(contentsOf: folder.appendingPathComponent("f\(seed).bin"))
                    == expected(2 << 20, seed: UInt64(seed)))
        }
        #expect(try queue.list.download(gids[0])?.completedLength == 2 << 20)
    }

    /// Paused while it runs: `paused` in the list when the call returns, the transfer stops; unpaused,
    /// it resumes from its journal to the right bytes.
    @Test func aPauseIsInTheListAtOnceAndTheTransferStops() async throws {
        let queue = DownloadQueue(
            list: try DownloadList(path: listPath), client: FastpullClient(), maximumActive: 1)
        let url = server.url("/gen/\(8 << 20)?seed=4&rate=2000000").absoluteString
        let item = try queue.add(uris: [url], directory: folder.path, outputName: "paused.bin")
        #expect(item.status == .active)
        #expect(try await waitFor { self.server.stats.bodyBytesSent > 2 << 20 })
        #expect(try queue.pause(item.gid).status == .paused)
        #expect(try queue.list.download(item.gid)?.status == .paused)
        await queue.waitUntilIdle()
        #expect(queue.runningGIDs.isEmpty)
        #expect(try queue.list.download(item.gid)?.status == .paused)
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("paused.bin").path))

        try queue.unpause(item.gid)
        #expect(try await waitFor { try queue.list.download(item.gid)?.status == .complete })
        #expect(
            try Data(contentsOf: folder.appendingPathComponent("paused.bin")) == expected(8 << 20, seed: 4))
    }

    /// Paused and unpaused at once (as aria2p's pause then resume does): the new transfer waits for the
    /// old one to stop, and the old one's end is not taken for a failure of the item.
    @Test func aPauseAndAnUnpauseAtOnceStillFinish() async throws {
        let queue = DownloadQueue(
            list: try DownloadList(path: listPath), client: FastpullClient(), maximumActive: 2)
        let url = server.url("/gen/\(4 << 20)?seed=6&rate=2000000").absoluteString
        let item = try queue.add(uris: [url], directory: folder.path, outputName: "again.bin")
        #expect(try await waitFor { self.server.stats.bodyBytesSent > 1 << 20 })
        try queue.pause(item.gid)
        try queue.unpause(item.gid)
        #expect(try await waitFor { try queue.list.download(item.gid)?.status.isStopped == true })
        let ended = try #require(try queue.list.download(item.gid))
        #expect(ended.status == .complete, "\(ended)")
        #expect(
            try Data(contentsOf: folder.appendingPathComponent("again.bin")) == expected(4 << 20, seed: 6))
    }

    /// Two items naming one file never run at once: the second waits, then finds the file the first
    /// verified, and both end complete with the right bytes.
    @Test func twoItemsNamingOneFileTakeTurns() async throws {
        let queue = DownloadQueue(
            list: try DownloadList(path: listPath), client: FastpullClient(), maximumActive: 4)
        let url = server.url("/gen/\(4 << 20)?seed=7&rate=4000000").absoluteString
        let first = try queue.add(uris: [url], directory: folder.path, outputName: "same.bin")
        let second = try queue.add(uris: [url], directory: folder.path, outputName: "same.bin")
        #expect(first.status == .active)
        #expect(second.status == .waiting)
        #expect(queue.runningGIDs == [first.gid])
        #expect(try await waitFor { try queue.list.downloads([.complete]).count == 2 })
        #expect(try Data(contentsOf: folder.appendingPathComponent("same.bin")) == expected(4 << 20, seed: 7))
    }

    /// The daemon's own files are written by no download, whoever names them: an `out` of the list's
    /// `-wal`, or a server's `Content-Disposition` of the secret's name. Before: both "complete", the
    /// list's items gone after a restart, and the secret the server's.
    @Test func noDownloadWritesTheDaemonsOwnFiles() async throws {
        var settings = ManagerDaemon.Settings(listPath: listPath, directory: folder.path)
        let secret = folder.appendingPathComponent("rpc-secret").path
        try "kept\n".write(toFile: secret, atomically: false, encoding: .utf8)
        settings.keptFiles = [secret]
        let queue = DownloadQueue(
            list: try DownloadList(path: listPath), client: FastpullClient(),
            reservedPaths: settings.reservedPaths)
        let wal = try queue.add(
            uris: [server.url("/gen/1000").absoluteString], directory: folder.path,
            outputName: "list.sqlite-wal")
        let named = try queue.add(
            uris: [
                server.url("/gen/1000?disposition=attachment%3B%20filename%3D%22rpc-secret%22").absoluteString
            ],
            directory: folder.path, outputName: nil)
        for gid in [wal.gid, named.gid] {
            #expect(try await waitFor { try queue.list.download(gid)?.status == .error })
            let failed = try #require(try queue.list.download(gid))
            #expect(failed.errorMessage?.contains("keeps for itself") == true, "\(failed)")
        }
        #expect(try String(contentsOfFile: secret, encoding: .utf8) == "kept\n")
        #expect(try DownloadList(path: listPath).downloads([.error]).count == 2)
    }

    /// A 404 fails with its reason; retried, it fails again the same way; as history it cannot be
    /// removed (aria2 answers the same), only forgotten.
    @Test func aFailureIsRecordedWithItsReason() async throws {
        let queue = DownloadQueue(list: try DownloadList(path: listPath), client: FastpullClient())
        let url = server.url("/gen/1000?status=404").absoluteString
        let item = try queue.add(uris: [url], directory: folder.path, outputName: "missing.bin")
        #expect(try await waitFor { try queue.list.download(item.gid)?.status == .error })
        let failed = try #require(try queue.list.download(item.gid))
        #expect(failed.errorMessage?.contains("404") == true, "\(failed)")
        // aria2's code for "resource not found".
        #expect(failed.errorCode == 3)
        try queue.retry(item.gid)
        #expect(try await waitFor { try queue.list.download(item.gid)?.status == .error })
        #expect(throws: DownloadListError.notAllowed(gid: item.gid, status: .error, event: .remove)) {
            try queue.remove(item.gid)
        }
        try queue.list.purge(item.gid)
        #expect(try queue.list.download(item.gid) == nil)
    }

    /// The queue stops (as a quit or a crash would) with a transfer under way; a new queue over the same
    /// list resumes it from its journal, and the paused item stays paused.
    @Test func aRestartResumesWhatWasActive() async throws {
        let url = server.url("/gen/\(16 << 20)?seed=5&rate=4000000").absoluteString
        let gid: String
        let pausedGID: String
        do {
            let queue = DownloadQueue(
                list: try DownloadList(path: listPath), client: FastpullClient(), maximumActive: 1)
            gid = try queue.add(uris: [url], directory: folder.path, outputName: "big.bin").gid
            pausedGID = try queue.add(uris: [url], directory: folder.path, outputName: "held.bin").gid
            try queue.pause(pausedGID)
            // A quarter of the file is in when the queue stops.
            #expect(try await waitFor { self.server.stats.bodyBytesSent > 4 << 20 })
            await queue.stop()
            #expect(try queue.list.download(gid)?.status == .active)
        }
        let queue = DownloadQueue(
            list: try DownloadList(path: listPath), client: FastpullClient(), maximumActive: 1)
        try queue.start()
        #expect(try await waitFor { try queue.list.download(gid)?.status == .complete })
        #expect(try Data(contentsOf: folder.appendingPathComponent("big.bin")) == expected(16 << 20, seed: 5))
        #expect(try queue.list.download(pausedGID)?.status == .paused)
        // Resumed from the journal, not fetched again from its start.
        #expect(server.stats.bodyBytesSent < (16 << 20) + (4 << 20), "\(server.stats)")
    }

    /// No item replaces a file another item of the list completed: a second item with the same `out`,
    /// and a second one whose server gives the same name, save beside it as `name.1`, and the list
    /// says so. One stopped under way (as a quit or a crash stops it) resumes its `name.2.part` from
    /// its journal, not a `name.3` from the start.
    @Test func noItemReplacesAnotherItemsFile() async throws {
        let size = 64 << 10
        let list = try DownloadList(path: listPath)
        var queue = DownloadQueue(list: list, client: FastpullClient(), maximumActive: 1)
        var gids: [String] = []
        for (seed, name) in [(1, "same.bin"), (2, "same.bin"), (3, nil), (4, nil)] as [(UInt64, String?)] {
            let url = server.url("/gen/\(size)?seed=\(seed)").absoluteString
            gids.append(try queue.add(uris: [url], directory: folder.path, outputName: name).gid)
        }
        #expect(try await waitFor { try queue.list.downloads([.complete]).count == 4 })
        for (gid, (name, seed)) in zip(
            gids, [("same.bin", 1), ("same.bin.1", 2), ("\(size)", 3), ("\(size).1", 4)])
        {
            #expect(try queue.list.download(gid)?.outputName == name)
            #expect(
                try Data(contentsOf: folder.appendingPathComponent(name))
                    == expected(size, seed: UInt64(seed)),
                "\(name)")
        }
        let big = 16 << 20
        let url = server.url("/gen/\(big)?seed=5&rate=4000000").absoluteString
        let stopped = try queue.add(uris: [url], directory: folder.path, outputName: "same.bin").gid
        let sentBefore = server.stats.bodyBytesSent
        #expect(try await waitFor { self.server.stats.bodyBytesSent - sentBefore > 4 << 20 })
        await queue.stop()
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("same.bin.2.part").path))
        queue = DownloadQueue(list: list, client: FastpullClient(), maximumActive: 1)
        try queue.start()
        #expect(try await waitFor { try queue.list.download(stopped)?.status == .complete })
        #expect(try queue.list.download(stopped)?.outputName == "same.bin.2")
        #expect(try Data(contentsOf: folder.appendingPathComponent("same.bin.2")) == expected(big, seed: 5))
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("same.bin.3").path))
        #expect(server.stats.bodyBytesSent - sentBefore < big + (4 << 20), "\(server.stats)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("same.bin")) == expected(size, seed: 1))
        // An `out` with a folder in it keeps its folder in the name the list records, renamed or not.
        var nested: [String] = []
        for seed in [6, 7] as [UInt64] {
            let url = server.url("/gen/\(size)?seed=\(seed)").absoluteString
            nested.append(try queue.add(uris: [url], directory: folder.path, outputName: "in/n.bin").gid)
        }
        #expect(
            try await waitFor { try nested.allSatisfy { try queue.list.download($0)?.status == .complete } })
        #expect(try queue.list.download(nested[0])?.outputName == "in/n.bin")
        #expect(try queue.list.download(nested[1])?.outputName == "in/n.bin.1")
        #expect(try Data(contentsOf: folder.appendingPathComponent("in/n.bin.1")) == expected(size, seed: 7))
    }

    /// Two items running at once whose server gives the same name: the second does not fail on the
    /// `.part` the first writes ("another download is writing …"); it saves beside it as `name.1`,
    /// and each file holds its own URL's bytes.
    @Test func twoItemsTheServerNamesAlikeBothComplete() async throws {
        let size = 1 << 20
        let queue = DownloadQueue(
            list: try DownloadList(path: listPath), client: FastpullClient(), maximumActive: 2)
        let gids = try [1, 2].map { (seed: UInt64) in
            let url = server.url("/gen/\(size)?seed=\(seed)").absoluteString
            return (gid: try queue.add(uris: [url], directory: folder.path, outputName: nil).gid, seed: seed)
        }
        #expect(try await waitFor { try queue.list.downloads([.complete, .error]).count == 2 })
        var names: Set<String> = []
        for (gid, seed) in gids {
            let item = try #require(try queue.list.download(gid))
            #expect(item.status == .complete, "\(item.errorMessage ?? "")")
            let name = try #require(item.outputName)
            names.insert(name)
            #expect(
                try Data(contentsOf: folder.appendingPathComponent(name)) == expected(size, seed: seed),
                "\(name)")
        }
        #expect(names == ["\(size)", "\(size).1"])
    }
}
