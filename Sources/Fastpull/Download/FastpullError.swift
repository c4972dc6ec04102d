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

    /// Creates an error with a code and a message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The human message.
    public var description: String { message }
}
