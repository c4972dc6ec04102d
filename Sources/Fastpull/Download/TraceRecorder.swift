import Foundation
import Synchronization

/// Writes a per-connection timeline of a download as newline-delimited JSON (`--trace FILE`): when
/// each connection opened, which ranges it fetched and how it got them (in order, stolen, hedged),
/// retries, stalls and closes. The benchmark harness draws its timeline chart from it.
final class TraceRecorder: Sendable {
    private let handle: FileHandle
    private let start = ContinuousClock.now
    private let lock = Mutex<Void>(())

    /// Creates (or truncates) the trace file.
    init(path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw FastpullError(.localIO, "cannot create the trace file \(path)")
        }
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw FastpullError(.localIO, "cannot open the trace file \(path) for writing")
        }
        self.handle = handle
    }

    deinit { try? handle.close() }

    /// Appends one record: `event`, the connection, and extra fields (numbers, booleans or strings).
    func record(_ event: String, connection: Int? = nil, _ fields: KeyValuePairs<String, any Sendable> = [:])
    {
        let seconds = (ContinuousClock.now - start).seconds
        var line = "{\"t\":\(String(format: "%.6f", seconds)),\"event\":\"\(event)\""
        if let connection { line += ",\"conn\":\(connection)" }
        for (key, value) in fields {
            switch value {
            case let number as Int64: line += ",\"\(key)\":\(number)"
            case let number as Int: line += ",\"\(key)\":\(number)"
            case let number as Double: line += ",\"\(key)\":\(String(format: "%.3f", number))"
            case let flag as Bool: line += ",\"\(key)\":\(flag)"
            default:
                line += ",\"\(key)\":"
                JSONValue.quote("\(value)", into: &line)
            }
        }
        line += "}\n"
        lock.withLock { _ in handle.write(Data(line.utf8)) }
    }
}
