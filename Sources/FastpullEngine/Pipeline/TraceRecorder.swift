import FoundationEssentials
import Glibc
import Synchronization

/// Writes a per-connection timeline of a download as newline-delimited JSON (`--trace FILE`): when
/// each connection opened, which ranges it fetched and how it got them (in order, stolen, hedged),
/// retries, stalls and closes. The benchmark harness draws its timeline chart from it.
package final class TraceRecorder: Sendable {
    private let descriptor: Int32
    private let start = ContinuousClock.now
    private let lock = Mutex<Void>(())

    /// Creates (or truncates) the trace file.
    init(path: String) throws {
        descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw FastpullError(
                .localIO, "cannot create the trace file \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(descriptor) }

    /// Appends one record: `event`, the connection, and extra fields (numbers, booleans or strings).
    func record(_ event: String, connection: Int? = nil, _ fields: KeyValuePairs<String, any Sendable> = [:])
    {
        let seconds = (ContinuousClock.now - start).seconds
        var line = "{\"t\":\(ByteFormat.printf("%.6f", seconds)),\"event\":\"\(event)\""
        if let connection { line += ",\"conn\":\(connection)" }
        for (key, value) in fields {
            switch value {
            case let number as Int64: line += ",\"\(key)\":\(number)"
            case let number as Int: line += ",\"\(key)\":\(number)"
            case let number as Double: line += ",\"\(key)\":\(ByteFormat.printf("%.3f", number))"
            case let flag as Bool: line += ",\"\(key)\":\(flag)"
            default:
                line += ",\"\(key)\":"
                JSONValue.quote("\(value)", into: &line)
            }
        }
        line += "}\n"
        lock.withLock { _ in
            var bytes = line.utf8[...]
            while !bytes.isEmpty {
                let written =
                    bytes.withContiguousStorageIfAvailable {
                        write(descriptor, $0.baseAddress, $0.count)
                    } ?? -1
                if written < 0 && errno == EINTR { continue }
                // A trace is an aid: a full disk ends it, not the download.
                guard written > 0 else { return }
                bytes = bytes.dropFirst(written)
            }
        }
    }
}
