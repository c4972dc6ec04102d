import Foundation

/// One event of a fastpull `--trace` file.
struct TraceEvent: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// A connection starts fetching a range.
        case begin
        /// A connection finished (or gave up) its range.
        case end
        /// Bytes arrived (extends the connection's current bar).
        case progress
        /// A range was split, shrunk or stolen.
        case steal
        /// A tail was fetched twice.
        case hedge
        /// A retry, reset, stall or failure.
        case retry
        case other
    }

    var time: Double
    /// The connection, when the event belongs to one.
    var connection: Int?
    var kind: Kind
    var start: Int64?
    var end: Int64?
    /// Bytes a finished range delivered (its real end is `start + bytes` when it was cut short).
    var bytes: Int64?
    /// A steal or hedge that this `begin` event's range came from (`"how": "stolen"` / `"hedged"`).
    var origin: Kind?
}

/// Reads a trace file: fastpull's `--trace` output, newline-delimited JSON such as
/// `{"t":0.012,"event":"window","conn":3,"start":0,"end":1048576,"how":"stolen"}` followed by
/// `{"t":0.310,"event":"done","conn":3,"start":0,"bytes":1048576}` (also `cut`, `stall`, `retry`,
/// `open`, `close`). To stay useful while that format settles, the reader is lenient; it accepts
/// newline-delimited JSON objects (or one JSON array, or `{"events": [...]}`) with:
/// - time: `t`, `time`, `seconds`, `elapsed`, `ts` or `timestamp` in seconds (`…ms`/`…Ms` keys in
///   milliseconds; absolute times are made relative to the first event);
/// - connection: `conn`, `connection`, `connectionID`, `connection_id`, `connectionId` or `id`;
/// - kind: `event`, `type` or `kind`; window/start/begin/fetch/request/assign open a bar,
///   done/cut/end/finish/complete/close close it, steal/split/shrink mark a steal, hedge a hedge,
///   retry/fail/error/stall/reset/drop a retry, progress/bytes/data extend the bar; `how` (or
///   `assignment`) containing steal/stolen or hedge on an opening event marks where the range came from;
/// - range: `start`/`end` (end exclusive), `from`/`to`, `offset`+`length`, or `range` as `[a, b]` or
///   `"a-b"` (inclusive, as in HTTP); `bytes` on a closing event gives the bytes actually fetched.
enum TraceFile {
    /// The events of the trace at `path`, sorted by time; nil when the file cannot be read or parsed.
    static func read(_ path: String) -> [TraceEvent]? {
        guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else { return nil }
        var objects: [[String: Any]] = []
        if let whole = try? JSONSerialization.jsonObject(with: data) {
            if let array = whole as? [[String: Any]] {
                objects = array
            } else if let object = whole as? [String: Any] {
                objects = (object["events"] as? [[String: Any]]) ?? [object]
            }
        } else {
            for line in data.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
                if let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] {
                    objects.append(object)
                }
            }
        }
        var events = objects.compactMap(event)
        guard !events.isEmpty else { return nil }
        let first = events.map(\.time).min() ?? 0
        if first > 1_000_000 {
            for index in events.indices { events[index].time -= first }
        }
        return events.sorted { $0.time < $1.time }
    }

    private static func event(_ object: [String: Any]) -> TraceEvent? {
        var time: Double?
        for key in ["t", "time", "seconds", "elapsed", "ts", "timestamp"] {
            if let value = number(object[key]) {
                time = value
                break
            }
        }
        if time == nil {
            for key in ["t_ms", "ms", "timeMs", "time_ms", "elapsedMs", "elapsed_ms"] {
                if let value = number(object[key]) {
                    time = value / 1000
                    break
                }
            }
        }
        guard let time else { return nil }
        var connection: Int?
        for key in ["conn", "connection", "connectionID", "connection_id", "connectionId", "id"] {
            if let value = number(object[key]) {
                connection = Int(value)
                break
            }
        }
        let name = ((object["event"] ?? object["type"] ?? object["kind"]) as? String ?? "").lowercased()
        var event = TraceEvent(time: time, connection: connection, kind: kind(name))
        event.bytes = number(object["bytes"]).map { Int64($0) }
        let how = ((object["how"] ?? object["assignment"]) as? String ?? "").lowercased()
        if how.contains("steal") || how.contains("stolen") {
            event.origin = .steal
        } else if how.contains("hedge") {
            event.origin = .hedge
        }
        if let start = number(object["start"] ?? object["from"] ?? object["offset"]) {
            event.start = Int64(start)
            if let end = number(object["end"]) {
                event.end = Int64(end)
            } else if let to = number(object["to"]) {
                event.end = Int64(to) + 1
            } else if let length = number(object["length"]) {
                event.end = Int64(start + length)
            }
        } else if let range = object["range"] as? [Any], range.count == 2, let low = number(range[0]),
            let high = number(range[1])
        {
            event.start = Int64(low)
            event.end = Int64(high) + 1
        } else if let range = object["range"] as? String {
            let parts = range.split(separator: "-").compactMap { Int64($0) }
            if parts.count == 2 {
                event.start = parts[0]
                event.end = parts[1] + 1
            }
        }
        return event
    }

    private static func kind(_ name: String) -> TraceEvent.Kind {
        func has(_ words: [String]) -> Bool { words.contains { name.contains($0) } }
        if has(["steal", "split", "shrink"]) { return .steal }
        if has(["hedge"]) { return .hedge }
        if has(["retry", "fail", "error", "stall", "reset", "drop"]) { return .retry }
        if has(["end", "done", "cut", "finish", "complete", "close"]) { return .end }
        if has(["window", "start", "begin", "fetch", "request", "assign"]) { return .begin }
        if has(["progress", "bytes", "data"]) { return .progress }
        return .other
    }

    private static func number(_ value: Any?) -> Double? {
        switch value {
        case let value as Double: value
        case let value as Int: Double(value)
        case let value as Int64: Double(value)
        case let value as NSNumber: value.doubleValue
        case let value as String: Double(value)
        default: nil
        }
    }
}
