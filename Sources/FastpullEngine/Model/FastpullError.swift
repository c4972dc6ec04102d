import FastpullHTTP
import FastpullNet
import FoundationEssentials

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
    /// A one-line human message: what happened, to which URL or path. What the caller can do about it
    /// is ``remedy``; ``description`` joins the two in the library's words, and the command line puts
    /// its own options there instead.
    public var message: String
    /// The one step that would get past the failure, where there is one.
    public var remedy: Remedy?
    /// The HTTP status of the answer that failed the download (404, 503, …), where one did: a build
    /// tool can tell a missing artifact from a server that is down without reading ``message``.
    public var httpStatus: Int?
    /// The URL the failure concerns (the one asked for, or where a redirect led), where there is one.
    /// It is the URL as given, credentials included; ``message`` shows it redacted.
    public var url: URL?
    /// The system's error number behind the failure (`ENOSPC`, `ECONNREFUSED`, …), where one is known.
    public var systemError: Int32?
    /// Another download held the output's `.part` when this one came to claim it: a caller that may
    /// save under another name (`--auto-rename`) goes on to the next.
    package var heldByAnotherDownload = false

    /// Creates an error with a code, a message and, where there is one, the step that gets past it.
    public init(_ code: Code, _ message: String, remedy: Remedy? = nil) {
        self.code = code
        self.message = message
        self.remedy = remedy
    }

    /// The same error with another message (its code and details kept).
    package func with(message: String) -> FastpullError {
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

    /// The message and the remedy, in the library's words: `…/x.iso already exists; set
    /// Configuration.replacesExistingFile to replace it`.
    public var description: String { remedy.map { "\(message); \($0)" } ?? message }
}

extension FastpullError {
    /// What a caller can do after a failure. A command line names its own options for each; the
    /// ``description`` names the ``Configuration`` fields.
    public enum Remedy: Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// Download to the same destination again: the saved bytes are kept and only the rest is fetched.
        case resume
        /// Free disk space, then download to the same destination again.
        case freeSpace
        /// The destination already exists: allow replacing it.
        case replaceExisting
        /// The remote file changed: allow starting over from its first byte.
        case startOver
        /// The server's certificate is not trusted: trust another authority, or skip verification.
        case trustAnotherAuthority
        /// A document followed for the file it describes (a Metalink file) cannot be used: save the
        /// document itself instead.
        case saveDocumentAsItIs

        /// The remedy in the library's words.
        public var description: String {
            switch self {
            case .resume: return "download to the same destination again to resume"
            case .freeSpace: return "free some space and download to the same destination again"
            case .replaceExisting: return "set Configuration.resume.replacesExistingFile to replace it"
            case .startOver: return "set Configuration.resume.restartsWhenRemoteChanges to start over"
            case .trustAnotherAuthority:
                return
                    "set Configuration.tls.caFile to trust another authority, or Configuration.tls.insecure to skip verification"
            case .saveDocumentAsItIs:
                return "set Configuration.sources.followsMetalink to false to save the document as it is"
            }
        }
    }

    /// The same error with another remedy.
    func with(remedy: Remedy?) -> FastpullError {
        var error = self
        error.remedy = remedy
        return error
    }
}
