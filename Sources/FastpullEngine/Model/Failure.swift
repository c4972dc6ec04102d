import FastpullHTTP
import FastpullNet
import FoundationEssentials

/// A failure, classified: the user-facing error and whether retrying may help.
package struct Failure: Sendable {
    package var error: FastpullError
    var retryable: Bool
    var retryAfter: Duration? = nil
    /// A stale keep-alive connection: retry at once on a fresh one, without counting a failure.
    var staleConnection = false
    /// No file descriptor was left for a connection: fewer connections would do.
    var outOfDescriptors = false
    /// Nothing listened at the port: retried only ``RetryPolicy/refusedRetries`` times, soon, since a
    /// server that is not there is seldom there a second later (a restarting one may be).
    var refused = false
    /// The host name does not exist (now): retried only when refused connections are
    /// (``RetryPolicy/retriesRefused``: a service still starting, whose name a container network
    /// adds when it starts), else the failure stands at once.
    var unknownHost = false

    /// Classifies any error thrown while talking to `url`.
    package init(_ thrown: any Error, url: URL) {
        self.init(classifying: thrown, url: url)
        error = error.with(url: url, from: thrown)
    }

    private init(classifying thrown: any Error, url: URL) {
        let location = url.redactedForDisplay
        switch thrown {
        case let error as FastpullError:
            self.init(error: error, retryable: false)
        case let error as NetError:
            switch error {
            case .cancelled:
                self.init(
                    error: FastpullError(.interrupted, "interrupted while downloading \(location)"),
                    retryable: false)
            case .tlsVerification:
                self.init(
                    error: FastpullError(.tls, "\(error) (\(location))", remedy: .trustAnotherAuthority),
                    retryable: false)
            case .tlsHandshake:
                self.init(
                    error: FastpullError(
                        .tls,
                        "\(error) (\(location)); the server may not speak TLS 1.2 or later, or this is not a TLS port"
                    ),
                    retryable: false)
            case .clientCertificate:
                self.init(error: FastpullError(.tls, "\(error) (\(location))"), retryable: false)
            case .socks:
                self.init(error: FastpullError(.network, "\(error) (\(location))"), retryable: false)
            case .localAddress:
                self.init(error: FastpullError(.network, "\(error) (\(location))"), retryable: false)
            case _ where error.isOutOfDescriptors:
                let limit = DescriptorBudget.limit.map { " (the limit is \($0); see ulimit -n)" } ?? ""
                self.init(
                    error: FastpullError(
                        .localIO,
                        "no file descriptor left for another connection to \(location)\(limit); use fewer connections or raise the limit"
                    ), retryable: true)
                outOfDescriptors = true
            case .resolve:
                // A name that does not exist is not asked for again (curl, wget and aria2c fail at
                // once) unless refused connections are retried (``unknownHost``).
                self.init(
                    error: FastpullError(
                        .network, "\(error) (\(location)); check the host name and your network"),
                    retryable: true)
                unknownHost = error.isUnknownHost
            default:
                self.init(error: FastpullError(.network, "\(error) (\(location))"), retryable: true)
                refused = error.isRefused
            }
        case let error as HTTPBodyError:
            if case .unsupportedTransferCoding = error {
                self.init(error: FastpullError(.httpStatus, "\(error) (\(location))"), retryable: false)
                return
            }
            self.init(error: FastpullError(.network, "\(error) (\(location))"), retryable: true)
            staleConnection = error == .closedBeforeResponse
        case let error as HTTPParseError:
            self.init(
                error: FastpullError(.httpStatus, "malformed HTTP response from \(location): \(error)"),
                retryable: true)
        case let error as StorageError:
            self.init(
                error: FastpullError(.localIO, "\(error)", remedy: error.isNoSpace ? .freeSpace : nil),
                retryable: false)
        case let error as TransferError:
            self.init(error, location: location)
        case let error as SpaceError:
            self.init(
                error: FastpullError(
                    .localIO,
                    "\(location) needs \(ByteFormat.size(error.needed)) (\(error.needed) bytes), but \(error.folder) has \(ByteFormat.size(error.free)) free; free some space or choose another folder"
                ), retryable: false)
        case let error as OrderedOutputError:
            self.init(error: FastpullError(.localIO, "\(error) (\(location))"), retryable: false)
        case let error as ClaimError:
            var failure = FastpullError(.localIO, error.description)
            // Another download holds the `.part` (its `flock` would block): a caller that may choose
            // another name tells it by this.
            if case .busy = error { failure.heldByAnotherDownload = true }
            self.init(error: failure, retryable: false)
        case let error as PlacementError:
            switch error {
            case .appeared:
                self.init(
                    error: FastpullError(
                        .localIO, "\(error); the verified file stays in its .part file",
                        remedy: .replaceExisting),
                    retryable: false)
            case .notAFile, .inUse:
                self.init(
                    error: FastpullError(.localIO, "\(error); choose another output path"), retryable: false)
            case .replaced:
                self.init(
                    error: FastpullError(
                        .localIO,
                        "\(error); its bytes are not saved: download it again, to a name no other download uses"
                    ),
                    retryable: false)
            }
        case is CancellationError:
            self.init(
                error: FastpullError(.interrupted, "interrupted while downloading \(location)"),
                retryable: false)
        default:
            self.init(
                error: FastpullError(.internalError, "unexpected error: \(thrown) (\(location))"),
                retryable: false)
        }
    }

    init(error: FastpullError, retryable: Bool, retryAfter: Duration? = nil) {
        self.error = error
        self.retryable = retryable
        self.retryAfter = retryAfter
    }

    private init(_ error: TransferError, location: String) {
        switch error {
        case .status(let status, let reason, let retryAfter):
            let retryable = status == 408 || status == 429 || status >= 500
            let text = reason.isEmpty ? "" : " \(reason)"
            self.init(
                error: FastpullError(.httpStatus, "HTTP \(status)\(text) from \(location)"),
                retryable: retryable,
                retryAfter: retryAfter)
        case .wholeFile(let range):
            self.init(
                error: FastpullError(
                    .httpStatus,
                    "\(location) answered 200 with the whole file to a request for bytes \(range.lowerBound)-\(range.upperBound); the server stopped honouring ranges"
                ), retryable: false)
        case .badContentRange(let range, let got):
            self.init(
                error: FastpullError(
                    .httpStatus,
                    "\(location) answered bytes \(range.lowerBound)-\(range.upperBound) with Content-Range '\(got)'"
                ),
                retryable: true)
        case .bodyTooLong(let expected):
            self.init(
                error: FastpullError(
                    .httpStatus, "\(location) sent more than the \(expected) bytes it announced"),
                retryable: true)
        case .bodyTooShort(let expected, let got):
            self.init(
                error: FastpullError(
                    .network, "\(location) sent \(got) of \(expected) bytes before the body ended"),
                retryable: true)
        case .sizeChanged(let expected, let got):
            self.init(
                error: FastpullError(
                    .remoteChanged,
                    "the size of \(location) changed from \(expected) to \(got) bytes during the download"),
                retryable: false)
        case .remoteChanged(let reason):
            self.init(
                error: FastpullError(
                    .remoteChanged,
                    "\(location) changed during the download (\(reason))", remedy: .startOver),
                retryable: false)
        case .tooManyRedirects(let count):
            self.init(
                error: FastpullError(.httpStatus, "more than \(count) redirects from \(location)"),
                retryable: false)
        case .rangeIgnored(let window, let status):
            self.init(
                error: FastpullError(
                    .httpStatus,
                    "\(location) answered \(status) with the whole file to a request for bytes \(window); a part of a file needs a server that serves ranges (nothing of that answer was written)"
                ), retryable: false)
        case .rangeOutsideFile(let window, let size):
            let length = size.map { " (it has \($0) bytes)" } ?? ""
            self.init(
                error: FastpullError(
                    .httpStatus, "bytes \(window) lie outside the file at \(location)\(length)"),
                retryable: false)
        case .badRedirect(let status, let target):
            self.init(
                error: FastpullError(
                    .httpStatus,
                    "HTTP \(status) from \(location) redirects to \(target.map { "'\($0)'" } ?? "nowhere"), which is not an http or https URL"
                ), retryable: false)
        }
    }
}
