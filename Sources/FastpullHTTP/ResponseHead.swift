import FastpullNet

/// The status line and header fields of an HTTP/1.x response, as produced by `ResponseHeadParser`.
package struct ResponseHead: Sendable, Equatable {
    package var versionMajor: Int
    package var versionMinor: Int
    package var status: Int
    package var reason: String
    package var headers: HTTPHeaders

    /// The body length declared by `Content-Length`, or nil when the field is absent, when
    /// `Transfer-Encoding` is present (which overrides it, RFC 9112 §6.3), or when the value is invalid
    /// (the parser rejects such heads with `badContentLength`).
    ///
    /// Whether a body exists at all also depends on the request method and status (HEAD, 1xx, 204, 304
    /// have none); that is the caller's decision.
    package var contentLength: Int64? {
        guard !headers.contains(name: "Transfer-Encoding") else { return nil }
        return try? Self.declaredContentLength(in: headers)
    }

    /// Whether the last transfer coding of `Transfer-Encoding` is `chunked`.
    package var isChunked: Bool {
        guard let last = headers.listElements(for: "Transfer-Encoding").last else { return false }
        return HTTPHeaders.namesEqual(last, "chunked")
    }

    /// The transfer codings of `Transfer-Encoding` other than `chunked` (and `identity`): codings such
    /// as `gzip` that would have to be undone to get the file's bytes.
    package var foreignTransferCodings: [String] {
        headers.listElements(for: "Transfer-Encoding").map { String($0) }.filter {
            !HTTPHeaders.namesEqual($0, "chunked") && !HTTPHeaders.namesEqual($0, "identity")
        }
    }

    /// Whether `Content-Type` is `multipart/byteranges`: the body is a multipart message framing one or
    /// more ranges, not the bytes of a range.
    package var isMultipartByteranges: Bool {
        guard let type = headers["Content-Type"] else { return false }
        let media = type.split(separator: ";", maxSplits: 1).first.map { HTTPHeaders.trimmingWhitespace($0) }
        return media.map { HTTPHeaders.namesEqual($0, "multipart/byteranges") } ?? false
    }

    /// Whether the server allows the connection to be reused after this response: for HTTP/1.1 unless
    /// `Connection` lists `close`; for HTTP/1.0 only when `Connection` lists `keep-alive` (and not
    /// `close`). A body delimited by the connection closing also ends the connection; that is the caller's
    /// decision since it depends on the request.
    package var keepAlive: Bool {
        let connection = headers.listElements(for: "Connection")
        if connection.contains(where: { HTTPHeaders.namesEqual($0, "close") }) {
            return false
        }
        if versionMajor == 1 && versionMinor == 0 {
            return connection.contains { HTTPHeaders.namesEqual($0, "keep-alive") }
        }
        return true
    }

    /// The value of every `Content-Length` field, which may repeat or hold a comma-separated list of
    /// identical values (RFC 9110 §8.6); nil when absent.
    package static func declaredContentLength(in headers: HTTPHeaders) throws(HTTPParseError) -> Int64? {
        var result: Int64?
        for value in headers.values(for: "Content-Length") {
            var sawElement = false
            for element in value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                let trimmed = HTTPHeaders.trimmingWhitespace(Substring(element))
                guard let length = parseDecimal(trimmed.utf8) else { throw .badContentLength }
                if let previous = result, previous != length {
                    throw .badContentLength
                }
                result = length
                sawElement = true
            }
            guard sawElement else { throw .badContentLength }
        }
        return result
    }

    /// `1*DIGIT` as a non-negative Int64, or nil when empty, not all digits, or too large.
    package static func parseDecimal<C: Collection<UInt8>>(_ digits: C) -> Int64? {
        guard !digits.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            guard !overflow1 && !overflow2 else { return nil }
            value = sum
        }
        return value
    }
}
