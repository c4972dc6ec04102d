import Foundation

/// Finds out what the remote file is: `HEAD` (following redirects, pinning the final URL), and a
/// `GET Range: bytes=0-0` when HEAD is refused, gives no length, or does not promise ranges.
///
/// Blocking: run it on a connection thread.
struct Probe {
    /// The probe's result; a `GET` that came back 200 (no ranges) keeps its unread body here so the
    /// stream download can use it instead of asking again.
    struct Outcome {
        var remote: RemoteFile
        var pendingBody: (connection: HTTPConnection, head: ResponseHead)?
    }

    let pool: ConnectionPool
    let maximumRedirects: Int

    func run(_ url: URL, slot: CancellationSlot) throws -> Outcome {
        var current = url
        var redirects = 0
        var method = "HEAD"
        while true {
            guard let origin = Origin(current) else {
                throw TransferError.badRedirect(status: 0, location: current.absoluteString)
            }
            let connection = try pool.connection(to: origin)
            try slot.attach(connection)
            defer { slot.detach() }
            let range: ClosedRange<Int64>? = method == "GET" ? 0...0 : nil
            let head: ResponseHead
            do {
                try connection.send(Requests.make(method, current, origin: origin, range: range))
                head = try connection.readHead()
            } catch {
                pool.giveBack(connection)
                throw error
            }

            if Redirect.isRedirect(head.status) {
                connection.discardBody(of: head, method: method)
                pool.giveBack(connection)
                let location = head.headers["Location"]
                guard let location, let next = Redirect.resolve(location: location, against: current) else {
                    throw TransferError.badRedirect(status: head.status, location: location)
                }
                redirects += 1
                guard redirects <= maximumRedirects else {
                    throw TransferError.tooManyRedirects(maximumRedirects)
                }
                current = next
                continue
            }

            let (etag, lastModified) = RemoteFile.validators(of: head)
            if method == "HEAD" {
                connection.discardBody(of: head, method: method)
                pool.giveBack(connection)
                let ranges = head.headers["Accept-Ranges"]?.lowercased().contains("bytes") == true
                if (200..<300).contains(head.status), let length = head.contentLength, ranges || length == 0 {
                    let remote = RemoteFile(
                        url: url, finalURL: current, size: length, acceptsRanges: length > 0,
                        etag: etag, lastModified: lastModified)
                    return Outcome(remote: remote, pendingBody: nil)
                }
                if (200..<300).contains(head.status) || [403, 405, 501].contains(head.status) {
                    method = "GET"
                    continue
                }
                throw TransferError.status(head.status, reason: head.reason, retryAfter: retryAfter(head))
            }

            switch head.status {
            case 206:
                let contentRange = head.headers["Content-Range"].flatMap(ContentRange.parse)
                guard let contentRange, contentRange.first == 0, contentRange.last == 0 else {
                    connection.close()
                    throw TransferError.badContentRange(
                        requested: 0...0, got: head.headers["Content-Range"] ?? "none")
                }
                connection.discardBody(of: head, method: method)
                pool.giveBack(connection)
                let remote = RemoteFile(
                    url: url, finalURL: current, size: contentRange.completeLength,
                    acceptsRanges: contentRange.completeLength != nil, etag: etag, lastModified: lastModified)
                return Outcome(remote: remote, pendingBody: nil)
            case 200..<300:
                // The server ignored the range: this response is the whole file; keep it.
                let remote = RemoteFile(
                    url: url, finalURL: current, size: head.contentLength, acceptsRanges: false,
                    etag: etag, lastModified: lastModified)
                return Outcome(remote: remote, pendingBody: (connection, head))
            case 416:
                connection.discardBody(of: head, method: method)
                pool.giveBack(connection)
                let total = head.headers["Content-Range"].flatMap(ContentRange.parse)?.completeLength
                guard total == 0 else {
                    throw TransferError.badContentRange(
                        requested: 0...0, got: head.headers["Content-Range"] ?? "none")
                }
                let remote = RemoteFile(
                    url: url, finalURL: current, size: 0, acceptsRanges: false, etag: etag,
                    lastModified: lastModified)
                return Outcome(remote: remote, pendingBody: nil)
            default:
                connection.discardBody(of: head, method: method)
                pool.giveBack(connection)
                throw TransferError.status(head.status, reason: head.reason, retryAfter: retryAfter(head))
            }
        }
    }

    private func retryAfter(_ head: ResponseHead) -> Duration? {
        head.headers["Retry-After"].flatMap { RetryPolicy.parseRetryAfter($0) }
    }
}
