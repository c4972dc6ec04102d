import FastpullNet
import FoundationEssentials

/// Failures the transfer path itself detects in what a server sent.
package enum TransferError: Error, Sendable {
    /// An error status.
    case status(Int, reason: String, retryAfter: Duration?)
    /// A 200 with the whole body, of the version pinned at the probe, where a 206 for one range was
    /// asked.
    case wholeFile(requested: ClosedRange<Int64>)
    /// A 206 whose `Content-Range` (or length) does not match the request.
    case badContentRange(requested: ClosedRange<Int64>, got: String)
    /// More body bytes than the range or declared size allows.
    case bodyTooLong(expected: Int64)
    /// The body ended before the expected size.
    case bodyTooShort(expected: Int64, got: Int64)
    /// The file's size differs from what the probe saw.
    case sizeChanged(expected: Int64, got: Int64)
    /// The remote file is not the one the download started with (a 200 to `If-Range`, or a new
    /// validator or size).
    case remoteChanged(String)
    /// More redirects than allowed.
    case tooManyRedirects(Int)
    /// A redirect without a usable `Location`.
    case badRedirect(status: Int, location: String?)
    /// A success other than 206 to a request for part of the file (``ByteWindow``, as `START-END`):
    /// the server ignores ranges, or sent the whole file because it changed.
    case rangeIgnored(String, status: Int)
    /// A part of the file (``ByteWindow``, as `START-END`) that starts past its end (its size, when
    /// the answer told it).
    case rangeOutsideFile(String, size: Int64?)
}

extension TransferError {
    /// The error status `head` answered with, and how long its `Retry-After` asks to wait.
    package static func status(answering head: ResponseHead) -> TransferError {
        .status(
            head.status, reason: head.reason,
            retryAfter: head.headers["Retry-After"].flatMap { RetryAfter.parse($0) })
    }
}
