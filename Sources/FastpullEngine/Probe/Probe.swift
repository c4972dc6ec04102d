import FastpullHTTP
import FoundationEssentials

/// Finds out what the remote file is: `HEAD` (following redirects, pinning the final URL), and a
/// `GET Range: bytes=0-0` when HEAD is refused, gives no length, or does not promise ranges.
///
/// A download that starts from nothing probes with its first GET instead (``opensWithGet``):
/// `Range: bytes=0-`, whose 206 tells the size and validators and is already the file's first bytes
/// (the whole of a small file, and on an object store, whose every request costs a tenth of a second,
/// a stream the other connections cut as they take its end). That answer, unread, goes to the first
/// connection.
///
/// Blocking: run it on a connection thread.
package struct Probe {
    /// The probe's result; a `GET` that came back 200 (no ranges) keeps its unread body here so the
    /// stream download can use it instead of asking again.
    struct Outcome {
        var remote: RemoteFile
        var pendingBody: (connection: HTTPConnection, head: ResponseHead)?
        /// How long the last request waited for its answer's head: what a request costs here (a round
        /// trip, and whatever the server takes to find the file).
        var requestCost: Duration = .zero
    }

    let pool: ConnectionPool
    let maximumRedirects: Int
    /// Follow a redirect from https to http (refused otherwise).
    var allowInsecureRedirects = false
    /// Probe with `GET Range: bytes=0-` and keep a 206's body unread in ``Outcome/pendingBody``.
    var opensWithGet = false

    /// Probes `url`.
    func run(_ url: URL, slot: CancellationSlot) throws -> Outcome {
        var reached = url
        return try run(url, slot: slot, reached: &reached)
    }

    /// Probes `url`; `reached` is where the latest request went (a redirect's target), so that a
    /// failure names the URL that answered, not only the one asked for.
    func run(_ url: URL, slot: CancellationSlot, reached: inout URL) throws -> Outcome {
        var opensWithGet = opensWithGet
        var current = url
        reached = url
        var redirects = 0
        var method = opensWithGet ? "GET" : "HEAD"
        // The digests a server offers are of the whole file, never of a part of it (`--range`).
        var digests = DigestLog(ofPart: pool.window != nil)
        // What a successful HEAD said, for a GET that follows it: a body without a length (closed by
        // the server) still has to be as long as HEAD announced.
        var announced: RemoteFile?
        // An answer that says the file is empty (a HEAD of length 0, a 416 to byte 0) is confirmed by
        // a GET without a range: dynamic servers answer HEAD with a length of 0, and some answer any
        // range with 416, while a plain GET brings the file.
        var confirmingEmpty = false
        while true {
            guard let origin = Origin(current) else {
                throw TransferError.badRedirect(status: 0, location: current.absoluteString)
            }
            // The first GET of a download from nothing asks for all of it; after a HEAD, one byte.
            let opening = opensWithGet && announced == nil && !confirmingEmpty
            let range: ClosedRange<Int64>? = method == "GET" && !opening && !confirmingEmpty ? 0...0 : nil
            let request = pool.request(
                method, current, origin: origin, range: range,
                extraHeaders: (opening ? [("Range", "bytes=0-")] : [])
                    + ServerDigests.probeRequestHeaders(for: current))
            // Loading the CA store (the first https connection's TLS context) is no part of what a
            // request costs: it happens once.
            if origin.secure { _ = try pool.tlsContext() }
            let sent = ContinuousClock.now
            let (connection, head) = try pool.exchange(request, to: origin, slot: slot)
            defer { slot.detach() }
            // A new connection's setup is not part of the request's cost.
            let cost = max(
                .zero,
                ContinuousClock.now - sent - (connection.requestCount == 1 ? connection.setupTime : .zero))

            // What the redirects said stays if this answer sends the probe back to HEAD.
            let beforeAnswer = digests
            digests.record(head, method: method, url: current, wholeRange: opening)
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
                try refuseDowngrade(from: current, to: next, asked: url)
                current = next
                reached = next
                continue
            }

            let (etag, lastModified) = RemoteFile.validators(of: head)
            if method == "HEAD" {
                connection.discardBody(of: head, method: method)
                pool.giveBack(connection)
                let ranges = head.headers["Accept-Ranges"]?.lowercased().contains("bytes") == true
                if (200..<300).contains(head.status), head.contentLength == 0 {
                    // Not announced: a GET's body without a length is not held to HEAD's 0.
                    confirmingEmpty = true
                    method = "GET"
                    continue
                }
                if (200..<300).contains(head.status), let length = head.contentLength, ranges {
                    let remote = RemoteFile(
                        url: url, finalURL: current, size: length, acceptsRanges: length > 0,
                        etag: etag, lastModified: lastModified)
                    return Outcome(
                        remote: digests.applied(to: remote, head: head), pendingBody: nil, requestCost: cost)
                }
                if (200..<300).contains(head.status) {
                    announced = RemoteFile(
                        url: url, finalURL: current, size: head.contentLength, acceptsRanges: false,
                        etag: etag, lastModified: lastModified)
                }
                // A HEAD refused (S3 refuses one on a URL signed for GET; some servers answer 404 or
                // 400 to HEAD alone): the ranged GET decides.
                if (200..<300).contains(head.status) || Self.headRefusals.contains(head.status) {
                    method = "GET"
                    continue
                }
                throw TransferError.status(head.status, reason: head.reason, retryAfter: retryAfter(head))
            }

            switch head.status {
            case _ where opening && !Self.isClean(opening: head):
                // An answer the opening GET cannot use as it is (see ``isClean(opening:)``): the probe
                // starts over as a HEAD, whose answer, with a one-byte GET's, settles it as before.
                connection.close()
                method = "HEAD"
                opensWithGet = false
                digests = beforeAnswer
                continue
            case 206 where opening:
                return opened(head, on: connection, url: url, current: current, digests: digests, cost: cost)
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
                return Outcome(
                    remote: digests.applied(to: remote, head: head), pendingBody: nil, requestCost: cost)
            case 200..<300:
                // The server ignored the range: this response is the whole file; keep it. Without a
                // length of its own, the body must be as long as HEAD said (when HEAD described the
                // same version).
                let sameVersion = announced.map { $0.changeReason(in: head) == nil } ?? false
                let remote = RemoteFile(
                    url: url, finalURL: current,
                    size: head.contentLength ?? (sameVersion ? announced?.size : nil), acceptsRanges: false,
                    etag: etag, lastModified: lastModified)
                return Outcome(
                    remote: digests.applied(to: remote, head: head), pendingBody: (connection, head))
            case 416 where !confirmingEmpty:
                connection.discardBody(of: head, method: method)
                pool.giveBack(connection)
                // Only an empty file has no byte 0. Servers say so with `bytes */0`, or (S3) with no
                // Content-Range at all; a length above 0 contradicts the answer. A GET without a range
                // confirms it (a server that refuses every range still sends the file).
                let contentRange = head.headers["Content-Range"]
                if let contentRange, ContentRange.parse(contentRange)?.completeLength != 0 {
                    throw TransferError.badContentRange(requested: 0...0, got: contentRange)
                }
                confirmingEmpty = true
                method = "GET"
                continue
            case 416:
                // A GET without a range refused as unsatisfiable: the file is empty, as said twice.
                connection.discardBody(of: head, method: method)
                pool.giveBack(connection)
                let remote = RemoteFile(
                    url: url, finalURL: current, size: 0, acceptsRanges: false, etag: etag,
                    lastModified: lastModified)
                return Outcome(
                    remote: digests.applied(to: remote, head: head), pendingBody: nil, requestCost: cost)
            default:
                connection.discardBody(of: head, method: method)
                pool.giveBack(connection)
                throw TransferError.status(head.status, reason: head.reason, retryAfter: retryAfter(head))
            }
        }
    }

    /// Whether the answer to an opening `GET Range: bytes=0-` is one the download can take as it is:
    /// a 206 from byte 0 of a file of known size, as long as its Content-Length says, framed as one
    /// range (a server may send less than asked for: some cap an open-ended range); a 200 with a
    /// length from a server that does not offer ranges (the whole file, streamed); or any answer
    /// that is no success (a redirect, a 416, an error status: handled as any probe's). Not: a 200
    /// from a server that says it offers ranges (some parse only ranges with both ends), or without
    /// a length (only HEAD could say how long it must be), and any other 206.
    static func isClean(opening head: ResponseHead) -> Bool {
        switch head.status {
        case 206:
            guard let range = head.headers["Content-Range"].flatMap(ContentRange.parse), range.first == 0,
                let last = range.last, let size = range.completeLength, last < size
            else { return false }
            return head.contentLength.map { $0 == last + 1 } ?? true && !head.isMultipartByteranges
        case 200..<300:
            let ranges = head.headers["Accept-Ranges"]?.lowercased().contains("bytes") == true
            return head.contentLength != nil && !ranges
        default:
            return true
        }
    }

    /// The 206 of an opening `GET Range: bytes=0-` (``isClean(opening:)``): its body stays unread for
    /// the first connection; bytes past its end (when the server sent less) are asked for later.
    private func opened(
        _ head: ResponseHead, on connection: HTTPConnection, url: URL, current: URL, digests: DigestLog,
        cost: Duration
    ) -> Outcome {
        let size = head.headers["Content-Range"].flatMap(ContentRange.parse)?.completeLength
        let (etag, lastModified) = RemoteFile.validators(of: head)
        let remote = RemoteFile(
            url: url, finalURL: current, size: size, acceptsRanges: true, etag: etag,
            lastModified: lastModified)
        return Outcome(
            remote: digests.applied(to: remote, head: head), pendingBody: (connection, head),
            requestCost: cost)
    }

    /// HEAD statuses that send the probe on to a ranged GET instead of failing it.
    static let headRefusals: Set<Int> = [400, 403, 404, 405, 501]

    /// The server digests seen along the probe: every response head is recorded, and ``ServerDigests``
    /// decides what each one may contribute (a redirect only its `X-Linked-Etag`, a 206 only what
    /// describes the whole representation).
    struct DigestLog: Sendable, Equatable {
        var trusted: [ChecksumExpectation] = []
        var ignored: [RemoteFile.IgnoredDigest] = []
        /// The latest response's `Content-Disposition` (the final one's, once the probe ends).
        var contentDisposition: String? = nil
        /// The latest response's `Content-Type`.
        var contentType: String? = nil
        /// Other URLs of the file (RFC 6249 `Link: <…>; rel=duplicate`) from every response along the
        /// probe, redirects included (a mirror redirector lists them there), without repeats.
        var duplicates: [URL] = []
        /// A Metalink document of the file (`Link: <…>; rel=describedby; type=application/metalink4+xml`).
        var metalink: URL? = nil
        /// Whether the download fetches a part of the file: no digest of the whole file applies.
        var ofPart = false

        /// Adds what `head`, the answer to a `method` request, says about the whole file.
        ///
        /// Left out of `ignored`, because they are no digest of the file and say nothing worth reporting:
        /// `Content-Digest` and `Content-MD5` of a 206 (they cover the range just sent), and `ETag`s
        /// that are not a SHA-256 (an ETag is a validator first; nginx's `"mtime-size"` looks like a
        /// multipart one).
        /// `wholeRange`: a 206 to `Range: bytes=0-`, which covers the whole file when its
        /// Content-Range says so.
        mutating func record(_ head: ResponseHead, method: String, url: URL, wholeRange: Bool = false) {
            contentDisposition = head.headers["Content-Disposition"]
            contentType = head.headers["Content-Type"]
            let links = LinkHeader(values: head.headers.values(for: "Link"))
            for duplicate in links.duplicates(base: url) where !duplicates.contains(duplicate) {
                duplicates.append(duplicate)
            }
            metalink = links.metalink(base: url) ?? metalink
            guard !ofPart else { return }
            let full = method == "HEAD" || head.status != 206 || (wholeRange && Self.coversAll(head))
            let found = ServerDigests.expectations(from: head, isFullRepresentation: full)
            for expectation in found.trusted where !trusted.contains(expectation) {
                trusted.append(expectation)
            }
            for entry in found.ignored {
                if entry.header == ServerDigests.HeaderName.etag { continue }
                if head.status == 206,
                    entry.header == ServerDigests.HeaderName.contentDigest
                        || entry.header == ServerDigests.HeaderName.contentMD5
                {
                    continue
                }
                let ignoredDigest = RemoteFile.IgnoredDigest(header: entry.header, reason: entry.reason)
                if !ignored.contains(ignoredDigest) { ignored.append(ignoredDigest) }
            }
        }

        /// Whether a 206's Content-Range is the whole file.
        private static func coversAll(_ head: ResponseHead) -> Bool {
            guard let range = head.headers["Content-Range"].flatMap(ContentRange.parse),
                let total = range.completeLength
            else { return false }
            return range.first == 0 && range.last == total - 1
        }

        /// `remote` with these digests, and whether its Last-Modified is strong by `head`'s `Date`.
        func applied(to remote: RemoteFile, head: ResponseHead) -> RemoteFile {
            var remote = remote
            remote.weakETag = RemoteFile.weakTag(of: head)
            if let lastModified = remote.lastModified {
                remote.lastModifiedIsStrong = HTTPDate.isStrongValidator(
                    lastModified: lastModified, date: head.headers["Date"])
            }
            remote.contentDisposition = contentDisposition
            remote.contentType = contentType
            remote.duplicates = duplicates
            remote.metalink = metalink
            remote.serverDigests = trusted
            remote.ignoredServerDigests = ignored
            return remote
        }
    }

    /// Throws unless following `from` → `to` keeps https, or insecure redirects are allowed. The
    /// request to `to` is never made. (Credentials would not follow anyway: the origin changes.)
    func refuseDowngrade(from: URL, to: URL, asked: URL) throws(FastpullError) {
        guard !allowInsecureRedirects, from.scheme?.lowercased() == "https", to.scheme?.lowercased() == "http"
        else { return }
        let via = from == asked ? "" : " (reached from \(asked.redactedForDisplay))"
        throw FastpullError(
            .httpStatus,
            "refusing to follow a redirect from https to http: \(from.redactedForDisplay)\(via) redirects to \(to.redactedForDisplay), which anyone on the path could read or alter; allow insecure redirects to follow it anyway"
        )
    }

    private func retryAfter(_ head: ResponseHead) -> Duration? {
        head.headers["Retry-After"].flatMap { RetryAfter.parse($0) }
    }
}
