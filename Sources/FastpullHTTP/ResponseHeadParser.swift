import FastpullNet

/// Incremental parser for an HTTP/1.x response head (status line and header fields, RFC 9112 §2–§5).
///
/// A value-type state machine with no I/O: feed it the bytes read from the connection until it returns
/// `.complete`; the bytes of that call after `consumed` are the start of the body (or of the next
/// response). The result does not depend on how the input is split between calls.
///
/// After `.complete` the parser is reset and ready for the next head (after a 1xx interim response, or
/// on the next request of a keep-alive connection). After it throws, every later `feed` throws the same
/// error.
package struct ResponseHeadParser {
    package enum Progress: Equatable {
        case needMore
        case complete(ResponseHead, consumed: Int)
    }

    private struct StatusLine {
        package var versionMajor: Int
        package var versionMinor: Int
        package var status: Int
        package var reason: String
    }

    private let maxHeadBytes: Int
    private let maxHeaderCount: Int
    /// Bytes of the current line received in earlier calls (without the LF).
    private var partialLine: [UInt8] = []
    /// Bytes of the head received so far, all lines, including line ends.
    private var headBytes = 0
    private var statusLine: StatusLine?
    private var headers = HTTPHeaders()
    private var failure: HTTPParseError?

    /// - Parameters:
    ///   - maxHeadBytes: the longest accepted head, status line to the empty line, line ends included.
    ///   - maxHeaderCount: the most header fields accepted.
    package init(maxHeadBytes: Int = 64 * 1024, maxHeaderCount: Int = 256) {
        precondition(maxHeadBytes > 0, "maxHeadBytes must be positive")
        precondition(maxHeaderCount >= 0, "maxHeaderCount must not be negative")
        self.maxHeadBytes = maxHeadBytes
        self.maxHeaderCount = maxHeaderCount
    }

    /// Feeds the next bytes; `consumed` counts only bytes of THIS call that belong to the head (the rest
    /// is body). Accepts CRLF and bare LF line ends, and obs-fold continuation lines (joined to the
    /// field before with a space, as RFC 9112 §5.2 asks of a user agent); rejects NUL or CR in values,
    /// a missing colon, whitespace before the colon, over-limit heads. Other control characters in a
    /// value are kept: curl and aria2 accept them, and the fields that frame a message are parsed
    /// strictly on their own. Byte-by-byte feeding gives the same result.
    package mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> Progress {
        if let failure {
            throw failure
        }
        do {
            return try parse(bytes)
        } catch {
            failure = error
            throw error
        }
    }

    private mutating func parse(_ bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> Progress {
        var position = 0
        while position < bytes.count {
            let room = maxHeadBytes - headBytes
            guard room > 0 else { throw .headTooLarge }
            // Never look past the limit: an over-long head fails as soon as its first excess byte arrives.
            let windowEnd = position + min(room, bytes.count - position)
            if statusLine == nil && partialLine.count < Self.statusPrefix.count {
                try checkStatusPrefix(bytes, from: position, to: windowEnd)
            }
            guard let lineFeed = bytes[position..<windowEnd].firstIndex(of: UInt8(ascii: "\n")) else {
                partialLine.append(contentsOf: bytes[position..<windowEnd])
                headBytes += windowEnd - position
                if windowEnd < bytes.count {
                    throw .headTooLarge
                }
                return .needMore
            }
            headBytes += lineFeed + 1 - position
            let head: ResponseHead?
            if partialLine.isEmpty {
                head = try processLine(UnsafeRawBufferPointer(rebasing: bytes[position..<lineFeed]))
            } else {
                var line: [UInt8] = []
                swap(&line, &partialLine)
                line.append(contentsOf: bytes[position..<lineFeed])
                // Array.withUnsafeBytes rethrows untyped errors; carry the typed error out in a Result.
                let result = line.withUnsafeBytes { line in
                    Result { () throws(HTTPParseError) in try processLine(line) }
                }
                head = try result.get()
                line.removeAll(keepingCapacity: true)
                partialLine = line
            }
            position = lineFeed + 1
            if let head {
                return .complete(head, consumed: position)
            }
        }
        return .needMore
    }

    private static let statusPrefix: [UInt8] = Array("HTTP/".utf8)

    /// Rejects a status line as soon as its first bytes are not `HTTP/`, so that a non-HTTP peer fails
    /// fast instead of filling the head limit.
    private func checkStatusPrefix(
        _ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int
    ) throws(HTTPParseError) {
        var offset = partialLine.count
        var index = start
        while offset < Self.statusPrefix.count && index < end {
            guard bytes[index] == Self.statusPrefix[offset] else { throw .badStatusLine }
            offset += 1
            index += 1
        }
    }

    /// Handles one complete line (without its LF). Returns the head when this was its empty last line.
    private mutating func processLine(_ rawLine: UnsafeRawBufferPointer) throws(HTTPParseError)
        -> ResponseHead?
    {
        var line = rawLine
        if let last = line.last, last == UInt8(ascii: "\r") {
            line = UnsafeRawBufferPointer(rebasing: line.dropLast())
        }
        guard let statusLine else {
            statusLine = try Self.parseStatusLine(line)
            return nil
        }
        if line.isEmpty {
            return try finishHead(statusLine)
        }
        if let first = line.first, Self.isWhitespace(first) {
            // obs-fold: the line continues the field before it.
            let text = try Self.parseContinuation(line)
            guard headers.continueLast(with: text) else { throw .badHeaderLine }
            return nil
        }
        guard headers.count < maxHeaderCount else { throw .tooManyHeaders }
        let (name, value) = try Self.parseHeaderLine(line)
        headers.add(name: name, value: value)
        return nil
    }

    private mutating func finishHead(_ statusLine: StatusLine) throws(HTTPParseError) -> ResponseHead {
        // Transfer-Encoding overrides Content-Length (RFC 9112 §6.3), which is then ignored.
        if !headers.contains(name: "Transfer-Encoding") {
            _ = try ResponseHead.declaredContentLength(in: headers)
        }
        let head = ResponseHead(
            versionMajor: statusLine.versionMajor,
            versionMinor: statusLine.versionMinor,
            status: statusLine.status,
            reason: statusLine.reason,
            headers: headers
        )
        self.statusLine = nil
        headers = HTTPHeaders()
        headBytes = 0
        return head
    }

    /// `HTTP-version SP status-code [SP reason-phrase]` with `HTTP/DIGIT.DIGIT`, major version 1.
    private static func parseStatusLine(_ line: UnsafeRawBufferPointer) throws(HTTPParseError) -> StatusLine {
        guard line.count > statusPrefix.count, line.starts(with: statusPrefix) else { throw .badStatusLine }
        var index = statusPrefix.count
        guard let major = digitValue(line[index]) else { throw .badStatusLine }
        index += 1
        var minor: Int?
        if index + 1 < line.count && line[index] == UInt8(ascii: ".") {
            minor = digitValue(line[index + 1])
            if minor != nil {
                index += 2
            }
        }
        let versionEndsWell = index == line.count || line[index] == UInt8(ascii: " ")
        if major != 1 && versionEndsWell {
            throw .unsupportedVersion  // HTTP/2, HTTP/2.0, HTTP/0.9, ...
        }
        guard let minor, versionEndsWell, index < line.count else { throw .badStatusLine }
        index += 1  // SP
        guard index + 3 <= line.count,
            let hundreds = digitValue(line[index]), hundreds >= 1,
            let tens = digitValue(line[index + 1]),
            let units = digitValue(line[index + 2])
        else { throw .badStatusLine }
        index += 3
        var reason = ""
        if index < line.count {
            guard line[index] == UInt8(ascii: " ") else { throw .badStatusLine }
            index += 1
            let reasonBytes = UnsafeRawBufferPointer(rebasing: line[index...])
            guard reasonBytes.allSatisfy(isFieldContentByte) else { throw .badStatusLine }
            reason = decodeText(reasonBytes)
        }
        return StatusLine(
            versionMajor: major, versionMinor: minor, status: hundreds * 100 + tens * 10 + units,
            reason: reason)
    }

    /// `field-name ":" OWS field-value OWS`, the name a token, the value free of control characters.
    private static func parseHeaderLine(
        _ line: UnsafeRawBufferPointer
    ) throws(HTTPParseError) -> (name: String, value: String) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { throw .badHeaderLine }
        let name = UnsafeRawBufferPointer(rebasing: line[..<colon])
        // A leading SP/HTAB (obs-fold) or whitespace before the colon is not a token character.
        guard name.allSatisfy(HTTPHeaders.isTokenCharacter) else { throw .badHeaderLine }
        var start = colon + 1
        var end = line.count
        while start < end && isWhitespace(line[start]) {
            start += 1
        }
        while end > start && isWhitespace(line[end - 1]) {
            end -= 1
        }
        let value = UnsafeRawBufferPointer(rebasing: line[start..<end])
        guard value.allSatisfy(isFieldContentByte) else { throw .badHeaderLine }
        return (String(decoding: name, as: UTF8.self), decodeText(value))
    }

    /// An obs-fold line's text, without the whitespace around it.
    private static func parseContinuation(_ line: UnsafeRawBufferPointer) throws(HTTPParseError) -> String {
        var start = 0
        var end = line.count
        while start < end && isWhitespace(line[start]) { start += 1 }
        while end > start && isWhitespace(line[end - 1]) { end -= 1 }
        let value = UnsafeRawBufferPointer(rebasing: line[start..<end])
        guard value.allSatisfy(isFieldContentByte) else { throw .badHeaderLine }
        return decodeText(value)
    }

    /// Field values and reason phrases: anything but NUL and CR (RFC 9110 §5.5 lets a recipient reject
    /// those; LF ends the line).
    @inline(__always)
    private static func isFieldContentByte(_ byte: UInt8) -> Bool {
        byte != 0 && byte != UInt8(ascii: "\r")
    }

    @inline(__always)
    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }

    @inline(__always)
    private static func digitValue(_ byte: UInt8) -> Int? {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") ? Int(byte - UInt8(ascii: "0")) : nil
    }

    /// UTF-8 when valid, otherwise ISO-8859-1 (obs-text), so no byte is lost or replaced.
    private static func decodeText(_ bytes: UnsafeRawBufferPointer) -> String {
        if let text = String(validating: bytes, as: UTF8.self) {
            return text
        }
        return String(String.UnicodeScalarView(bytes.lazy.map { Unicode.Scalar($0) }))
    }
}
