import Foundation

/// One `--json` event line of fastpull, e.g. `{"event":"progress","bytes":1048576,...}`.
struct JSONEvent: Sendable, CustomStringConvertible {
    /// The line as printed.
    let line: String
    /// The `event` field: `probe`, `progress`, `resumed`, `finished`, `failed`, ...
    let name: String

    /// The event on `line`, or nil when the line is not a JSON object with an `event`.
    init?(line: String) {
        guard let object = Self.object(line), let name = object["event"] as? String else { return nil }
        self.line = line
        self.name = name
    }

    /// The integer field `key` (JSON numbers, including ones written as 1.0).
    func int(_ key: String) -> Int64? {
        (Self.object(line)?[key] as? NSNumber)?.int64Value
    }

    /// The string field `key`.
    func string(_ key: String) -> String? {
        Self.object(line)?[key] as? String
    }

    var description: String { line }

    private static func object(_ line: String) -> [String: Any]? {
        guard line.hasPrefix("{") else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }
}
