import CSQLite
import FoundationEssentials

/// A failure SQLite reported: the call, its result code and its message.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    /// SQLite's result code (`SQLITE_BUSY`, `SQLITE_CONSTRAINT`, …).
    public let code: Int32
    /// What SQLite said, with the statement or call it was about.
    public let message: String

    /// `SQLite error CODE: MESSAGE`.
    public var description: String { "SQLite error \(code): \(message)" }
}

/// One connection to an SQLite database file, opened in WAL mode with full synchronous commits: a
/// transaction that returned is on disk, so a change the manager acknowledged survives `kill -9` and a
/// power cut. Not thread-safe: its owner (``DownloadList``) serializes every use under one lock.
final class SQLiteDatabase {
    private var handle: OpaquePointer?
    let path: String

    /// Opens (creating if needed) the database at `path`.
    init(path: String) throws(SQLiteError) {
        self.path = path
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let result = sqlite3_open_v2(path, &db, flags, nil)
        guard result == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(db)
            throw SQLiteError(code: result, message: "cannot open \(path): \(message)")
        }
        handle = db
        // Another process with the list open (a second daemon refused later, a reader) may hold a
        // lock for a moment: wait for it rather than fail.
        sqlite3_busy_timeout(db, 5000)
        try execute("PRAGMA journal_mode = WAL")
        try execute("PRAGMA synchronous = FULL")
        try execute("PRAGMA foreign_keys = ON")
    }

    deinit { sqlite3_close_v2(handle) }

    /// Runs `sql` (one or more statements, no parameters, rows ignored).
    func execute(_ sql: String) throws(SQLiteError) {
        var error: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(handle, sql, nil, nil, &error)
        guard result == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? lastMessage
            sqlite3_free(error)
            throw SQLiteError(code: result, message: "\(message) (in \(sql.prefix(80)))")
        }
    }

    /// Runs `body` in one transaction (`BEGIN IMMEDIATE`: it takes the write lock at once), committed
    /// when it returns and rolled back when it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// A prepared statement for `sql`.
    func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var statement: OpaquePointer?
        let result = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard result == SQLITE_OK, let statement else {
            throw SQLiteError(code: result, message: "\(lastMessage) (in \(sql.prefix(80)))")
        }
        return SQLiteStatement(statement, database: self)
    }

    /// Runs `sql` with `values` bound to its `?` parameters, ignoring rows.
    func run(_ sql: String, _ values: [SQLiteValue] = []) throws(SQLiteError) {
        let statement = try prepare(sql)
        try statement.bind(values)
        while try statement.step() {}
    }

    /// Every row `sql` returns with `values` bound, each as its columns.
    func rows(_ sql: String, _ values: [SQLiteValue] = []) throws(SQLiteError) -> [[SQLiteValue]] {
        let statement = try prepare(sql)
        try statement.bind(values)
        var rows: [[SQLiteValue]] = []
        while try statement.step() { rows.append(statement.columns) }
        return rows
    }

    /// The `user_version` header field: the schema's version.
    var userVersion: Int {
        get throws(SQLiteError) { Int(try rows("PRAGMA user_version").first?.first?.integer ?? 0) }
    }

    fileprivate var lastMessage: String { String(cString: sqlite3_errmsg(handle)) }
}

/// A value in a column or a parameter.
enum SQLiteValue: Equatable, Sendable {
    case null
    case integer(Int64)
    case text(String)

    var integer: Int64? { if case .integer(let value) = self { value } else { nil } }
    var text: String? { if case .text(let value) = self { value } else { nil } }
}

/// A prepared statement, finalized when released.
final class SQLiteStatement {
    private let statement: OpaquePointer
    private let database: SQLiteDatabase

    fileprivate init(_ statement: OpaquePointer, database: SQLiteDatabase) {
        self.statement = statement
        self.database = database
    }

    deinit { sqlite3_finalize(statement) }

    func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let result: Int32
            switch value {
            case .null: result = sqlite3_bind_null(statement, index)
            case .integer(let number): result = sqlite3_bind_int64(statement, index, number)
            case .text(let text):
                result = text.withCString {
                    fp_sqlite3_bind_text(statement, index, $0, Int32(text.utf8.count))
                }
            }
            guard result == SQLITE_OK else {
                throw SQLiteError(
                    code: result, message: "cannot bind parameter \(index): \(database.lastMessage)")
            }
        }
    }

    /// Advances to the next row: true while there is one.
    func step() throws(SQLiteError) -> Bool {
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let result: throw SQLiteError(code: result, message: database.lastMessage)
        }
    }

    /// The current row's columns.
    var columns: [SQLiteValue] {
        (0..<sqlite3_column_count(statement)).map { column in
            switch sqlite3_column_type(statement, column) {
            case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, column))
            case SQLITE_NULL: return .null
            default:
                guard let text = sqlite3_column_text(statement, column) else { return .null }
                return .text(String(cString: text))
            }
        }
    }
}
