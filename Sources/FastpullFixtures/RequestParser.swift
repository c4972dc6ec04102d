/// One request head as the fixture server received it.
struct RequestHead: Sendable, Equatable {
    /// One header field, in arrival order.
    struct Field: Sendable, Equatable {
        var name: String
        var value: String
    }

    var method: String
    var target: String
    /// The `x` of `HTTP/1.x`.
    var versionMinor: Int
    var fields: [Field]

    /// The first value of the header `name` (case-insensitive).
    func header(_ name: String) -> String? {
        fields.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The path part of the target (before `?`).
    var path: Substring {
        target.firstIndex(of: "?").map { target[..<$0] } ?? target[...]
    }

    /// The query part of the target (after the first `?`), empty when there is none.
    var query: Substring {
        target.firstIndex(of: "?").map { target[target.index(after: $0)...] } ?? ""
    }

    /// Whether the client asked to keep the connection open after this exchange: HTTP/1.1 unless
    /// `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.
    var wantsKeepAlive: Bool {
        let tokens = (header("Connection") ?? "").lowercased().split(separator: ",").map {
            $0.trimmingSpaces()
        }
        if tokens.contains("close") { return false }
        return versionMinor >= 1 || tokens.contains("keep-alive")
    }
}

/// A small, strict parser for request heads (server side; the Fastpull library has its own client-side
/// response parser). It is stateless: feed it everything received so far.
enum RequestParser {
    enum Failure: Error, Equatable {
        /// No end of head within the size limit.
        case tooLarge
        /// The head is not an HTTP/1.x request head.
        case malformed(String)
    }

    enum Progress: Equatable {
        case needMore
        /// The head is complete; `consumed` bytes of the input belong to it (the rest is body or the next
        /// request).
        case complete(RequestHead, consumed: Int)
    }

    /// Parses the request head at the start of `bytes`. Accepts CRLF and bare LF line ends and ignores
    /// empty lines before the request line; rejects obsolete line folding, missing colons and
    /// whitespace before a colon.
    static func parse(_ bytes: UnsafeRawBufferPointer, maxHeadBytes: Int = 64 * 1024) throws(Failure)
        -> Progress
    {
        var lines: [Range<Int>] = []
        var lineStart = 0
        var index = 0
        var end: Int?
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\n") {
                var lineEnd = index
                if lineEnd > lineStart && bytes[lineEnd - 1] == UInt8(ascii: "\r") { lineEnd -= 1 }
                if lineEnd == lineStart {
                    if !lines.isEmpty {
                        end = index + 1
                        break
                    }
                } else {
                    lines.append(lineStart..<lineEnd)
                }
                lineStart = index + 1
            }
            index += 1
        }
        guard let end else {
            if bytes.count > maxHeadBytes { throw .tooLarge }
            return .needMore
        }
        if end > maxHeadBytes { throw .tooLarge }
        let text = lines.map { String(decoding: UnsafeRawBufferPointer(rebasing: bytes[$0]), as: UTF8.self) }
        var head = try parseRequestLine(text[0])
        for line in text.dropFirst() {
            head.fields.append(try parseField(line))
        }
        return .complete(head, consumed: end)
    }

    private static func parseRequestLine(_ line: String) throws(Failure) -> RequestHead {
        let parts = line.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw .malformed("bad request line")
        }
        guard parts[0].allSatisfy({ $0.isLetter && $0.isASCII }) else { throw .malformed("bad method") }
        let version = parts[2]
        guard version.hasPrefix("HTTP/1."), version.count == 8, let minor = version.last?.wholeNumberValue
        else { throw .malformed("unsupported version") }
        return RequestHead(
            method: String(parts[0]), target: String(parts[1]), versionMinor: minor, fields: [])
    }

    private static func parseField(_ line: String) throws(Failure) -> RequestHead.Field {
        guard let first = line.first, first != " ", first != "\t" else {
            throw .malformed("obsolete line folding")
        }
        guard let colon = line.firstIndex(of: ":") else { throw .malformed("header without colon") }
        let name = line[..<colon]
        guard !name.isEmpty, !name.contains(where: { $0 == " " || $0 == "\t" }) else {
            throw .malformed("bad header name")
        }
        let value = line[line.index(after: colon)...].trimmingSpaces()
        guard !value.unicodeScalars.contains(where: { $0.value == 0 || $0 == "\r" }) else {
            throw .malformed("bad header value")
        }
        return RequestHead.Field(name: String(name), value: String(value))
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = lastIndex(where: { !isSpace($0) })!
        return String(self[first...last])
    }
}
