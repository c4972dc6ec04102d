import Foundation
import Testing

@testable import FastpullManager

/// The manager's list in SQLite: what each event may do, the queue's order, and that every change is
/// on disk when the call returns (another connection sees it, a reopened list has it).
@Suite("The download list")
final class DownloadListTests {
    let folder: URL
    var path: String { folder.appendingPathComponent("list.sqlite").path }

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "fastpull-list-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: folder) }

    /// Every event from every status: the allowed moves, and nil for the rest.
    @Test func eachEventMovesOnlyFromTheStatusesThatAllowIt() {
        let allowed: [ItemEvent: [ItemStatus: ItemStatus]] = [
            .start: [.waiting: .active],
            .pause: [.waiting: .paused, .active: .paused],
            .unpause: [.paused: .waiting],
            .finish: [.active: .complete],
            .fail: [.active: .error],
            .remove: [.waiting: .removed, .active: .removed, .paused: .removed],
            .retry: [.error: .waiting],
            .interrupt: [.active: .waiting],
            .networkLost: [.active: .waiting],
        ]
        for event in ItemEvent.allCases {
            for status in ItemStatus.allCases {
                #expect(status.applying(event) == allowed[event]?[status], "\(event) from \(status)")
            }
        }
        // History never moves but by a retry of a failure.
        #expect(ItemStatus.complete.isStopped && ItemStatus.removed.isStopped && ItemStatus.error.isStopped)
    }

    @Test func itemsKeepTheirOrderAndMoveInTheQueue() throws {
        let list = try DownloadList(path: path)
        let a = try list.add(uris: ["http://127.0.0.1:1/a"], directory: "/tmp")
        let b = try list.add(
            uris: ["http://127.0.0.1:1/b", "http://127.0.0.1:2/b"], directory: "/tmp", outputName: "b.bin")
        let c = try list.add(uris: ["http://127.0.0.1:1/c"], directory: "/tmp", options: ["split": "4"])
        let first = try list.add(uris: ["http://127.0.0.1:1/d"], directory: "/tmp", position: 0)
        #expect(try list.downloads([.waiting]).map(\.gid) == [first.gid, a.gid, b.gid, c.gid])
        #expect(a.gid.count == 16 && a.gid.allSatisfy(\.isHexDigit))
        #expect(Set([a.gid, b.gid, c.gid, first.gid]).count == 4)

        #expect(try list.changePosition(c.gid, by: 0, from: .set) == 0)
        #expect(try list.changePosition(a.gid, by: 1, from: .current) == 3)
        #expect(try list.changePosition(first.gid, by: -10, from: .end) == 0)
        #expect(try list.downloads([.waiting]).map(\.gid) == [first.gid, c.gid, b.gid, a.gid])
        // A paused item keeps its place; a running one has none.
        try list.apply(.pause, to: b.gid)
        #expect(try list.downloads([.waiting, .paused]).map(\.gid) == [first.gid, c.gid, b.gid, a.gid])
        try list.apply(.start, to: first.gid)
        #expect(throws: DownloadListError.notQueued(gid: first.gid, status: .active)) {
            try list.changePosition(first.gid, by: 0, from: .set)
        }
        let stored = try #require(try list.download(b.gid))
        #expect(stored.uris == ["http://127.0.0.1:1/b", "http://127.0.0.1:2/b"])
        #expect(stored.outputName == "b.bin" && stored.status == .paused)
        #expect(try list.download(c.gid)?.options == ["split": "4"])
    }

    @Test func aChangeTheEventDoesNotAllowIsRefusedAndChangesNothing() throws {
        let list = try DownloadList(path: path)
        let item = try list.add(uris: ["http://127.0.0.1:1/a"], directory: "/tmp")
        #expect(throws: DownloadListError.notAllowed(gid: item.gid, status: .waiting, event: .finish)) {
            try list.apply(.finish, to: item.gid)
        }
        #expect(throws: DownloadListError.unknown(gid: "0123456789abcdef")) {
            try list.apply(.pause, to: "0123456789abcdef")
        }
        #expect(throws: DownloadListError.noURI) { try list.add(uris: [], directory: "/tmp") }
        try list.apply(.start, to: item.gid)
        let failed = try list.apply(.fail, to: item.gid, error: (code: 3, message: "connection refused"))
        #expect(
            failed.status == .error && failed.errorCode == 3 && failed.errorMessage == "connection refused")
        // Retried, it waits again and the failure is cleared.
        let retried = try list.apply(.retry, to: item.gid)
        #expect(retried.status == .waiting && retried.errorCode == nil && retried.errorMessage == nil)
        #expect(throws: DownloadListError.notAllowed(gid: item.gid, status: .waiting, event: .remove)) {
            try list.purge(item.gid)
        }
        try list.apply(.remove, to: item.gid)
        try list.purge(item.gid)
        #expect(try list.download(item.gid) == nil)
    }

    /// Each change is committed before the call returns: a second connection to the file (another
    /// process's view) sees it at once, and nothing of it is only in the first one's memory.
    @Test func everyChangeIsOnDiskWhenTheCallReturns() throws {
        let list = try DownloadList(path: path)
        let other = try DownloadList(path: path)
        let item = try list.add(uris: ["http://127.0.0.1:1/a"], directory: "/tmp")
        #expect(try other.download(item.gid)?.status == .waiting)
        try list.apply(.pause, to: item.gid)
        #expect(try other.download(item.gid)?.status == .paused)
        try list.recordProgress(item.gid, total: 1000, completed: 400)
        #expect(try other.download(item.gid)?.completedLength == 400)
        // WAL, with a commit synced to disk: what a power cut cannot take back.
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
    }

    /// A restart: the item that was active waits again, first in line, to resume from its journal; the
    /// paused one stays paused, the complete and the removed ones stay as history.
    @Test func aRestartPutsWhatWasRunningFirstInLineAndKeepsTheRest() throws {
        var gids: [String: String] = [:]
        do {
            let list = try DownloadList(path: path)
            for name in ["waiting", "active", "paused", "complete", "removed"] {
                gids[name] = try list.add(uris: ["http://127.0.0.1:1/\(name)"], directory: "/tmp").gid
            }
            try list.apply(.start, to: gids["active"]!)
            try list.apply(.pause, to: gids["paused"]!)
            try list.apply(.start, to: gids["complete"]!)
            try list.apply(.finish, to: gids["complete"]!)
            try list.apply(.remove, to: gids["removed"]!)
        }
        let reopened = try DownloadList(path: path)
        let recovered = try reopened.recoverAfterRestart()
        #expect(recovered.map(\.gid) == [gids["active"]!])
        #expect(recovered.first?.status == .waiting)
        #expect(try reopened.downloads([.waiting]).map(\.gid) == [gids["active"]!, gids["waiting"]!])
        #expect(try reopened.download(gids["paused"]!)?.status == .paused)
        #expect(try reopened.download(gids["complete"]!)?.status == .complete)
        #expect(try reopened.download(gids["removed"]!)?.status == .removed)
        #expect(try reopened.recoverAfterRestart().isEmpty)
    }

    /// A list of schema 1 is upgraded in place: its items kept, the indexes of schema 2 made.
    @Test func aListOfSchemaOneIsUpgraded() throws {
        let old = try SQLiteDatabase(path: path)
        try old.execute(
            """
            CREATE TABLE items (gid TEXT PRIMARY KEY, status TEXT NOT NULL, position INTEGER NOT NULL,
                uris TEXT NOT NULL, directory TEXT NOT NULL, output_name TEXT, options TEXT NOT NULL,
                total_length INTEGER NOT NULL DEFAULT 0, completed_length INTEGER NOT NULL DEFAULT 0,
                error_code INTEGER, error_message TEXT, changed_at INTEGER NOT NULL);
            CREATE INDEX items_by_status ON items (status, position);
            INSERT INTO items (gid, status, position, uris, directory, options, changed_at)
                VALUES ('00000000000000aa', 'paused', 0, '["http://x/y"]', '/tmp', '{}', 1700000000);
            PRAGMA user_version = 1;
            """)
        let list = try DownloadList(path: path)
        #expect(try list.download("00000000000000aa")?.status == .paused)
        let db = try SQLiteDatabase(path: path)
        #expect(try db.userVersion == DownloadList.schemaVersion)
        let indexes = try db.rows("SELECT name FROM sqlite_master WHERE type = 'index'").compactMap {
            $0.first?.text
        }
        #expect(Set(indexes).isSuperset(of: ["items_by_position", "items_by_change"]), "\(indexes)")
        // A change made now is later than the old one: stops keep their order.
        _ = try list.apply(.remove, to: "00000000000000aa")
        #expect(try list.stoppedDownloads().map(\.gid) == ["00000000000000aa"])
    }

    /// A list a newer Fastpull wrote is refused with a message, not misread.
    @Test func aNewerSchemaIsRefused() throws {
        _ = try DownloadList(path: path)
        let db = try SQLiteDatabase(path: path)
        try db.execute("PRAGMA user_version = 99")
        #expect(throws: DownloadListError.newerSchema(path: path, version: 99)) {
            try DownloadList(path: path)
        }
        #expect("\(DownloadListError.newerSchema(path: path, version: 99))".contains("newer fastpull"))
    }
}
