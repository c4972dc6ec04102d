import FastpullNet

/// A violation of HTTP/1.1 message syntax or of a parser limit, found by `ResponseHeadParser` or
/// `ChunkedDecoder`. The connection that produced it cannot be reused.
package enum HTTPParseError: Error, Sendable, Equatable {
    /// The response head grew past `maxHeadBytes` before its empty line.
    case headTooLarge
    /// The response head has more than `maxHeaderCount` header fields.
    case tooManyHeaders
    /// The status line is not `HTTP/1.x SSS reason`.
    case badStatusLine
    /// A header (or trailer) line is malformed: no colon, a name that is not a token, whitespace before
    /// the colon, obs-fold, or a control character in the value.
    case badHeaderLine
    /// `Content-Length` is not a decimal number that fits Int64, or several values disagree.
    case badContentLength
    /// A chunk-size line has no hex digits, an invalid character, or a size beyond Int64.
    case badChunkSize
    /// A chunk-size line (with its extensions) is longer than `maxChunkSizeLine`.
    case chunkTooLarge
    /// Chunk data is not followed by CRLF.
    case badChunkTerminator
    /// The trailer section after the last chunk is longer than `maxTrailerBytes`.
    case trailerTooLarge
    /// The status line names an HTTP version other than 1.x (e.g. `HTTP/2`, `HTTP/0.9`).
    case unsupportedVersion
}

extension HTTPParseError: CustomStringConvertible {
    package var description: String {
        switch self {
        case .headTooLarge: "response head too large"
        case .tooManyHeaders: "too many header fields in response"
        case .badStatusLine: "malformed HTTP status line"
        case .badHeaderLine: "malformed HTTP header line"
        case .badContentLength: "invalid or conflicting Content-Length"
        case .badChunkSize: "malformed chunk size in chunked body"
        case .chunkTooLarge: "chunk-size line too long in chunked body"
        case .badChunkTerminator: "chunk data not followed by CRLF in chunked body"
        case .trailerTooLarge: "trailer section too large in chunked body"
        case .unsupportedVersion: "unsupported HTTP version (only HTTP/1.x is spoken)"
        }
    }
}
