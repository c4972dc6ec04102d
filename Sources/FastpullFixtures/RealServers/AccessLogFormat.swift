import Foundation

/// How a server's access log lines are laid out, and how to read one back.
///
/// The servers we configure ourselves (nginx, apache, lighttpd, h2o, squid) write one tab-separated line
/// per request: connection, method, target, status, `Range`, bytes sent, then the ``headers``. moto and
/// tinyproxy log in their own fixed formats.
enum AccessLogFormat: Sendable {
    /// How a tab-separated server escapes special bytes in logged values.
    enum Escaping: Sendable {
        /// nginx, h2o, apache and lighttpd: `\xHH`, `\"` and `\\`.
        case backslashes
        /// squid: `%HH`.
        case percent
    }

    /// connection, method, target, status, range, bytes, then one column per header name.
    case tabSeparated(headers: [String], escaping: Escaping)
    /// Werkzeug's `127.0.0.1 - - [date] "GET /path HTTP/1.1" 206 -` (moto's server).
    case werkzeug
    /// tinyproxy's `CONNECT ... Request (file descriptor 5): GET http://host/path HTTP/1.1`.
    case tinyproxy

    /// The entry one log line holds, or nil for a line that is not a request.
    func parse(_ line: Substring) -> AccessLogEntry? {
        switch self {
        case .tabSeparated(let headers, let escaping):
            return Self.parseTabSeparated(line, headers: headers, escaping: escaping)
        case .werkzeug:
            return Self.parseWerkzeug(line)
        case .tinyproxy:
            return Self.parseTinyproxy(line)
        }
    }

    private static func parseTabSeparated(
        _ line: Substring, headers: [String], escaping: Escaping
    ) -> AccessLogEntry? {
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map {
            value(String($0), escaping: escaping)
        }
        guard fields.count >= 6 + headers.count, let method = fields[1], let target = fields[2] else {
            return nil
        }
        var entry = AccessLogEntry(
            method: method, target: target, status: fields[3].flatMap { Int($0) }, range: fields[4],
            bytesSent: fields[5].flatMap { Int64($0) }, connection: fields[0])
        for (index, name) in headers.enumerated() {
            if let header = fields[6 + index] { entry.headers[name] = header }
        }
        return entry
    }

    /// A logged value, unescaped; nil for the servers' "-" (or nothing) meaning "absent".
    private static func value(_ raw: String, escaping: Escaping) -> String? {
        guard !raw.isEmpty, raw != "-" else { return nil }
        switch escaping {
        case .percent:
            return raw.removingPercentEncoding ?? raw
        case .backslashes:
            guard raw.contains("\\") else { return raw }
            let utf8 = Array(raw.utf8)
            var bytes: [UInt8] = []
            var index = 0
            while index < utf8.count {
                let next = index + 1 < utf8.count ? utf8[index + 1] : 0
                if utf8[index] == UInt8(ascii: "\\"), next == UInt8(ascii: "x"), index + 3 < utf8.count,
                    let byte = UInt8(String(decoding: utf8[index + 2...index + 3], as: UTF8.self), radix: 16)
                {
                    bytes.append(byte)
                    index += 4
                } else if utf8[index] == UInt8(ascii: "\\"),
                    next == UInt8(ascii: "\"") || next == UInt8(ascii: "\\")
                {
                    bytes.append(next)
                    index += 2
                } else {
                    bytes.append(utf8[index])
                    index += 1
                }
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    private static func parseWerkzeug(_ line: Substring) -> AccessLogEntry? {
        guard let open = line.range(of: "] \""), let close = line.range(of: "\" ", options: .backwards),
            open.upperBound < close.lowerBound
        else { return nil }
        let request = line[open.upperBound..<close.lowerBound].split(separator: " ")
        let after = line[close.upperBound...].split(separator: " ")
        guard request.count >= 2, let status = after.first.flatMap({ Int($0) }) else { return nil }
        let bytes = after.count > 1 ? Int64(after[1]) : nil
        return AccessLogEntry(
            method: String(request[0]), target: String(request[1]), status: status, bytesSent: bytes)
    }

    private static func parseTinyproxy(_ line: Substring) -> AccessLogEntry? {
        guard let marker = line.range(of: "Request (file descriptor "),
            let colon = line[marker.upperBound...].range(of: "): ")
        else { return nil }
        let request = line[colon.upperBound...].split(separator: " ")
        guard request.count >= 2 else { return nil }
        return AccessLogEntry(method: String(request[0]), target: String(request[1]))
    }
}
