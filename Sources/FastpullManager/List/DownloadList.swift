import FoundationEssentials
import Synchronization

/// The manager's list of downloads, kept in SQLite so that nothing is lost: every change is one
/// transaction, committed (WAL, `synchronous = FULL`) before the call returns, so a change the manager
/// acknowledged is on disk whatever happens next (`kill -9`, a power cut). Byte progress lives in each
/// file's journal beside it; the list keeps the items, their order, status and options, and a recent
/// figure of their progress for display.
///
/// After a restart, ``recoverAfterRestart()`` puts back in line the items that were active (they
/// resume from their journals); paused ones stay paused, and finished, failed and removed ones stay as
/// history: a complete item is never fetched again.
///
/// Thread-safe: every call takes the list's lock.
public final class DownloadList: Sendable {
    /// The schema this version writes; ``init(path:)`` creates it, or upgrades an older one.
    public static let schemaVersion = 2

    private let database: Mutex<SQLiteDatabase>
    /// Told of every status change once it is committed (``observe(_:)``).
    private let observers = Mutex<[@Sendable (ManagedDownload, ItemEvent) -> Void]>([])
    /// The file the list lives in.
    public let path: String

    /// Opens the list at `path`, creating it (and its schema) if needed.
    ///
    /// - Throws: ``SQLiteError`` when the file cannot be opened; ``DownloadListError/newerSchema(path:version:)``
    ///   when a newer Fastpull wrote it.
    public init(path: String) throws {
        self.path = path
        let db = try SQLiteDatabase(path: path)
        let version = try db.userVersion
        guard version <= Self.schemaVersion else {
            throw DownloadListError.newerSchema(path: path, version: version)
        }
        if version < 1 {
            try db.transaction {
                try db.execute(
                    """
                    CREATE TABLE items (
                        gid TEXT PRIMARY KEY,
                        status TEXT NOT NULL,
                        position INTEGER NOT NULL,
                        uris TEXT NOT NULL,
                        directory TEXT NOT NULL,
                        output_name TEXT,
                        options TEXT NOT NULL,
                        total_length INTEGER NOT NULL DEFAULT 0,
                        completed_length INTEGER NOT NULL DEFAULT 0,
                        error_code INTEGER,
                        error_message TEXT,
                        changed_at INTEGER NOT NULL
                    );
                    CREATE INDEX items_by_status ON items (status, position);
                    PRAGMA user_version = 1;
                    """)
            }
        }
        if version < 2 {
            // Version 2: where the queue ends and the latest change are read from an index, not a
            // scan of the whole list (adding to a list of 10,000 was a scan per item).
            try db.transaction {
                try db.execute(
                    """
                    CREATE INDEX items_by_position ON items (position);
                    CREATE INDEX items_by_change ON items (changed_at);
                    PRAGMA user_version = 2;
                    """)
            }
        }
        database = Mutex(db)
    }

    /// Adds a download of `uris` (the first asked for, the rest its mirrors), waiting at the end of the
    /// queue, or at `position` among the waiting ones (0 is first); `paused`, it waits for an unpause.
    /// Returns it with its GID: `gid` when given (16 hexadecimal digits, unused; aria2's `gid`
    /// option), else a new one.
    @discardableResult
    public func add(
        uris: [String], directory: String, outputName: String? = nil, options: [String: String] = [:],
        position: Int? = nil, gid given: String? = nil, paused: Bool = false
    ) throws -> ManagedDownload {
        guard !uris.isEmpty else { throw DownloadListError.noURI }
        if let given, given.utf8.count != 16 || !given.allSatisfy(\.isHexDigit) {
            throw DownloadListError.badGID(given)
        }
        return try database.withLock { db in
            try db.transaction {
                var gid = given?.lowercased() ?? Self.newGID()
                while try !db.rows("SELECT 1 FROM items WHERE gid = ?", [.text(gid)]).isEmpty {
                    guard given == nil else { throw DownloadListError.gidInUse(gid) }
                    gid = Self.newGID()
                }
                var item = ManagedDownload(
                    gid: gid, uris: uris, directory: directory, outputName: outputName, options: options)
                if paused { item.status = .paused }
                let end = try Self.queueEnd(db)
                try db.run(
                    """
                    INSERT INTO items (gid, status, position, uris, directory, output_name, options, changed_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                    [
                        .text(gid), .text(item.status.rawValue), .integer(end), .text(try Self.json(uris)),
                        .text(directory), outputName.map { .text($0) } ?? .null,
                        .text(try Self.json(options)),
                        .integer(try Self.stamp(db)),
                    ])
                if let position { try Self.place(gid, at: position, in: db) }
                return item
            }
        }
    }

    /// The item with `gid`, if there is one.
    public func download(_ gid: String) throws -> ManagedDownload? {
        try database.withLock { db in try Self.item(gid, in: db) }
    }

    /// The items whose status is one of `statuses`, in queue order (oldest first among history):
    /// `limit` of them from the `offset`-th, or all.
    public func downloads(
        _ statuses: Set<ItemStatus> = Set(ItemStatus.allCases), offset: Int = 0, limit: Int? = nil
    ) throws -> [ManagedDownload] {
        try database.withLock { db in
            let marks = statuses.map { _ in "?" }.joined(separator: ", ")
            return try db.rows(
                "SELECT \(Self.columns) FROM items WHERE status IN (\(marks)) ORDER BY position LIMIT ? OFFSET ?",
                statuses.sorted { $0.rawValue < $1.rawValue }.map { .text($0.rawValue) } + [
                    .integer(Int64(limit ?? -1)), .integer(Int64(max(offset, 0))),
                ]
            ).map(Self.item(from:))
        }
    }

    /// Whether an item other than `gid` completed the file `outputName` in `directory`: the file
    /// there is that item's.
    public func isCompletedByAnother(directory: String, outputName: String, gid: String) throws -> Bool {
        try database.withLock { db in
            try !db.rows(
                "SELECT 1 FROM items WHERE status = ? AND directory = ? AND output_name = ? AND gid != ? LIMIT 1",
                [.text(ItemStatus.complete.rawValue), .text(directory), .text(outputName), .text(gid)]
            ).isEmpty
        }
    }

    /// How many items have each status (those with none left out).
    public func counts() throws -> [ItemStatus: Int] {
        try database.withLock { db in
            var counts: [ItemStatus: Int] = [:]
            for row in try db.rows("SELECT status, COUNT(*) FROM items GROUP BY status") {
                if let status = row[0].text.flatMap(ItemStatus.init(rawValue:)) {
                    counts[status] = Int(row[1].integer ?? 0)
                }
            }
            return counts
        }
    }

    /// The finished, failed and removed items, in the order they stopped (`aria2.tellStopped`):
    /// `limit` of them from the `offset`-th, or all.
    public func stoppedDownloads(offset: Int = 0, limit: Int? = nil) throws -> [ManagedDownload] {
        try database.withLock { db in
            try db.rows(
                "SELECT \(Self.columns) FROM items WHERE status IN (?, ?, ?) ORDER BY changed_at LIMIT ? OFFSET ?",
                [
                    .text(ItemStatus.complete.rawValue), .text(ItemStatus.error.rawValue),
                    .text(ItemStatus.removed.rawValue), .integer(Int64(limit ?? -1)),
                    .integer(Int64(max(offset, 0))),
                ]
            ).map(Self.item(from:))
        }
    }

    /// Applies `event` to the item with `gid` (``ItemStatus/applying(_:)`` says what it may do), with
    /// the failure's code and message for ``ItemEvent/fail``; returns the item as it is now. An item
    /// that waits again after an interruption goes first in line.
    @discardableResult
    public func apply(_ event: ItemEvent, to gid: String, error: (code: Int, message: String)? = nil) throws
        -> ManagedDownload
    {
        let item = try database.withLock { db in
            try db.transaction { try Self.apply(event, to: gid, error: error, in: db) }
        }
        for observer in observers.withLock({ $0 }) { observer(item, event) }
        return item
    }

    /// Calls `observer` with the item and the event after every status change, once it is committed
    /// (on the thread that made it, which may hold the queue's lock: an observer must not block, nor
    /// call back into the queue).
    public func observe(_ observer: @escaping @Sendable (ManagedDownload, ItemEvent) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    /// Moves a waiting or paused item in the queue, as `aria2.changePosition`: `offset` from the start
    /// (`.set`), from where it is (`.current`) or from the end (`.end`); returns its new place (0 is
    /// first). Clamped to the queue.
    public func changePosition(_ gid: String, by offset: Int, from anchor: PositionAnchor) throws -> Int {
        try database.withLock { db in
            try db.transaction {
                let queue = try Self.queue(db)
                guard let current = queue.firstIndex(of: gid) else {
                    guard let item = try Self.item(gid, in: db) else {
                        throw DownloadListError.unknown(gid: gid)
                    }
                    throw DownloadListError.notQueued(gid: gid, status: item.status)
                }
                let base =
                    switch anchor {
                    case .set: 0
                    case .current: current
                    case .end: queue.count - 1
                    }
                let target = min(max(base + offset, 0), queue.count - 1)
                try Self.place(gid, at: target, in: db)
                return target
            }
        }
    }

    /// Where ``changePosition(_:by:from:)`` counts from.
    public enum PositionAnchor: String, Sendable {
        case set = "POS_SET"
        case current = "POS_CUR"
        case end = "POS_END"
    }

    /// Sets options of a waiting, paused or active item (`aria2.changeOption`): `dir` and `out` move
    /// where it is saved (not while active), every other one is kept verbatim (an empty value removes
    /// it). Returns the item as it is now.
    @discardableResult
    public func changeOptions(_ gid: String, _ changes: [String: String]) throws -> ManagedDownload {
        try database.withLock { db in
            try db.transaction {
                guard var item = try Self.item(gid, in: db) else { throw DownloadListError.unknown(gid: gid) }
                guard !item.status.isStopped else {
                    throw DownloadListError.notQueued(gid: gid, status: item.status)
                }
                if item.status == .active, changes["dir"] != nil || changes["out"] != nil {
                    throw DownloadListError.movingActive(gid: gid)
                }
                for (key, value) in changes where key != "dir" && key != "out" {
                    item.options[key] = value.isEmpty ? nil : value
                }
                if let directory = changes["dir"] { item.directory = directory }
                if let name = changes["out"] { item.outputName = name.isEmpty ? nil : name }
                try db.run(
                    "UPDATE items SET options = ?, directory = ?, output_name = ? WHERE gid = ?",
                    [
                        .text(try Self.json(item.options)), .text(item.directory),
                        item.outputName.map { .text($0) } ?? .null, .text(gid),
                    ])
                return item
            }
        }
    }

    /// Records the item's size and the bytes saved so far, for display (the journal is exact).
    public func recordProgress(_ gid: String, total: Int64, completed: Int64) throws {
        try database.withLock { db in
            try db.run(
                "UPDATE items SET total_length = ?, completed_length = ? WHERE gid = ?",
                [.integer(total), .integer(completed), .text(gid)])
        }
    }

    /// Records the name the file got (the server's, for an item added without one).
    public func recordOutputName(_ gid: String, _ name: String) throws {
        try database.withLock { db in
            try db.run("UPDATE items SET output_name = ? WHERE gid = ?", [.text(name), .text(gid)])
        }
    }

    /// Forgets a finished, failed or removed item (`aria2.removeDownloadResult`).
    public func purge(_ gid: String) throws {
        try database.withLock { db in
            try db.transaction {
                guard let item = try Self.item(gid, in: db) else { throw DownloadListError.unknown(gid: gid) }
                guard item.status.isStopped else {
                    throw DownloadListError.notAllowed(gid: gid, status: item.status, event: .remove)
                }
                try db.run("DELETE FROM items WHERE gid = ?", [.text(gid)])
            }
        }
    }

    /// After a start: the items that were active when the manager stopped wait again, first in line
    /// and in their order, to resume from their journals. Returns them.
    public func recoverAfterRestart() throws -> [ManagedDownload] {
        try database.withLock { db in
            try db.transaction {
                let active = try db.rows(
                    "SELECT \(Self.columns) FROM items WHERE status = ? ORDER BY position",
                    [.text(ItemStatus.active.rawValue)]
                ).map(Self.item(from:))
                let first = try db.rows("SELECT MIN(position) FROM items").first?.first?.integer ?? 0
                for (index, item) in active.enumerated() {
                    _ = try Self.apply(.interrupt, to: item.gid, error: nil, in: db)
                    try db.run(
                        "UPDATE items SET position = ? WHERE gid = ?",
                        [.integer(first - Int64(active.count) + Int64(index)), .text(item.gid)])
                }
                return try active.map { try Self.item($0.gid, in: db) ?? $0 }
            }
        }
    }

    // MARK: - Inside a transaction

    private static let columns =
        "gid, status, uris, directory, output_name, options, total_length, completed_length, error_code, error_message"

    private static func apply(
        _ event: ItemEvent, to gid: String, error: (code: Int, message: String)?, in db: SQLiteDatabase
    ) throws -> ManagedDownload {
        guard var item = try item(gid, in: db) else { throw DownloadListError.unknown(gid: gid) }
        guard let next = item.status.applying(event) else {
            throw DownloadListError.notAllowed(gid: gid, status: item.status, event: event)
        }
        item.status = next
        item.errorCode = next == .error ? error?.code ?? 1 : nil
        item.errorMessage = next == .error ? error?.message ?? "failed" : nil
        try db.run(
            "UPDATE items SET status = ?, error_code = ?, error_message = ?, changed_at = ? WHERE gid = ?",
            [
                .text(next.rawValue), item.errorCode.map { .integer(Int64($0)) } ?? .null,
                item.errorMessage.map { .text($0) } ?? .null, .integer(try stamp(db)), .text(gid),
            ])
        return item
    }

    private static func item(_ gid: String, in db: SQLiteDatabase) throws -> ManagedDownload? {
        try db.rows("SELECT \(columns) FROM items WHERE gid = ?", [.text(gid)]).first.map(item(from:))
    }

    private static func item(from row: [SQLiteValue]) throws -> ManagedDownload {
        let decoder = JSONDecoder()
        var item = ManagedDownload(
            gid: row[0].text ?? "",
            uris: try decoder.decode([String].self, from: Data((row[2].text ?? "[]").utf8)),
            directory: row[3].text ?? "", outputName: row[4].text,
            options: try decoder.decode([String: String].self, from: Data((row[5].text ?? "{}").utf8)))
        item.status = ItemStatus(rawValue: row[1].text ?? "") ?? .error
        item.totalLength = row[6].integer ?? 0
        item.completedLength = row[7].integer ?? 0
        item.errorCode = row[8].integer.map { Int($0) }
        item.errorMessage = row[9].text
        return item
    }

    /// The waiting and paused items' GIDs, in order: the queue that positions count in.
    private static func queue(_ db: SQLiteDatabase) throws -> [String] {
        try db.rows(
            "SELECT gid FROM items WHERE status IN (?, ?) ORDER BY position",
            [.text(ItemStatus.waiting.rawValue), .text(ItemStatus.paused.rawValue)]
        ).compactMap { $0.first?.text }
    }

    /// One past the last position used.
    private static func queueEnd(_ db: SQLiteDatabase) throws -> Int64 {
        (try db.rows("SELECT MAX(position) FROM items").first?.first?.integer ?? -1) + 1
    }

    /// Puts `gid` at `index` of the queue, renumbering the queue's positions in order.
    private static func place(_ gid: String, at index: Int, in db: SQLiteDatabase) throws {
        var order = try queue(db).filter { $0 != gid }
        order.insert(gid, at: min(max(index, 0), order.count))
        let slots = try db.rows(
            "SELECT position FROM items WHERE status IN (?, ?) ORDER BY position",
            [.text(ItemStatus.waiting.rawValue), .text(ItemStatus.paused.rawValue)]
        ).compactMap { $0.first?.integer }
        for (gid, position) in zip(order, slots) {
            try db.run("UPDATE items SET position = ? WHERE gid = ?", [.integer(position), .text(gid)])
        }
    }

    private static func json<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// When a change happens: milliseconds since 1970, made later than every stamp in the list, so
    /// that the order of changes (``stoppedDownloads()``) is the order they were made even within one
    /// millisecond or when the clock steps back.
    private static func stamp(_ db: SQLiteDatabase) throws -> Int64 {
        let latest = try db.rows("SELECT MAX(changed_at) FROM items").first?.first?.integer ?? 0
        return max(Int64(Date().timeIntervalSince1970 * 1000), latest + 1)
    }

    /// 16 random hexadecimal digits.
    private static func newGID() -> String {
        String(UInt64.random(in: 1...UInt64.max), radix: 16).leftPadded(to: 16)
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
