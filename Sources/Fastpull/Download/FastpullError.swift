import Foundation

/// The one error type Fastpull throws. Its ``code`` is stable and is also the command line's exit code.
public struct FastpullError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure happened. The raw value is the `fastpull` command's exit code.
    public enum Code: Int32, Sendable, CaseIterable {
        /// A bug in Fastpull.
        case internalError = 1
        /// A bad option, a bad URL or an unsupported scheme.
        case usage = 2
        /// DNS, connect, reset or timeout, after the retry budget.
        case network = 3
        /// An HTTP error status (4xx/5xx) after retries, or a response that breaks the protocol.
        case httpStatus = 4
        /// The remote file changed while it was being downloaded.
        case remoteChanged = 5
        /// The downloaded size or a checksum does not match.
        case integrity = 6
        /// Local I/O: disk full, permission, missing folder.
        case localIO = 7
        /// TLS certificate verification or handshake failure.
        case tls = 8
        /// Interrupted by a signal or cancelled; the download can be resumed.
        case interrupted = 130
    }

    /// The stable category of the failure.
    public var code: Code
    /// A one-line human message: what happened, to which URL or path, and what to do next.
    public var message: String
    /// The HTTP status of the answer that failed the download (404, 503, …), where one did: a build
    /// tool can tell a missing artifact from a server that is down without reading ``message``.
    public var httpStatus: Int?
    /// The URL the failure concerns (the one asked for, or where a redirect led), where there is one.
    /// It is the URL as given, credentials included; ``message`` shows it redacted.
    public var url: URL?
    /// The system's error number behind the failure (`ENOSPC`, `ECONNREFUSED`, …), where one is known.
    public var systemError: Int32?

    /// Creates an error with a code and a message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The same error with another message (its code and details kept).
    func with(message: String) -> FastpullError {
        var error = self
        error.message = message
        return error
    }

    /// The same error, carrying `url` (unless it has one) and the structured details of `thrown`.
    func with(url: URL, from thrown: any Error) -> FastpullError {
        var error = self
        if error.url == nil { error.url = url }
        switch thrown {
        case TransferError.status(let status, _, _): error.httpStatus = error.httpStatus ?? status
        case let net as NetError: error.systemError = error.systemError ?? net.systemError
        case let storage as StorageError: error.systemError = error.systemError ?? storage.errno
        default: break
        }
        return error
    }

    /// The human message.
    public var description: String { message }
}
