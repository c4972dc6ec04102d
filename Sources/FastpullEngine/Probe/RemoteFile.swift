import FastpullHTTP
import FoundationEssentials

/// What the probe learned about the remote file.
package struct RemoteFile: Sendable, Equatable {
    /// The URL the user asked for.
    var url: URL
    /// The URL after redirects; every later request goes here.
    package var finalURL: URL
    /// The size in bytes, when the server told it.
    package var size: Int64?
    /// Whether the server answers byte-range requests with 206.
    package var acceptsRanges: Bool
    /// A strong entity tag, if the server sent one.
    var etag: String?
    /// A weak entity tag (`W/"…"`), if the server sent one instead: no validator for `If-Range`, but a
    /// different one on a later answer still says the file changed.
    var weakETag: String? = nil
    /// `Last-Modified`, if the server sent it.
    var lastModified: String?
    /// Digests of the whole file the server offered and that can be trusted to verify it: from the
    /// probe's final response and from redirect hops' `X-Linked-Etag`, without repeats.
    var serverDigests: [ChecksumExpectation] = []
    /// Digest fields the server sent that cannot be trusted (weak, composite, encoded, malformed), with
    /// the reason; they verify nothing and fail nothing.
    var ignoredServerDigests: [IgnoredDigest] = []
    /// The final response's `Content-Disposition`, if any: the command line names the file after it.
    var contentDisposition: String? = nil
    /// The final response's `Content-Type`, if any.
    package var contentType: String? = nil
    /// Other URLs of the same file the server named (RFC 6249 `rel=duplicate`), most preferred first.
    var duplicates: [URL] = []
    /// A Metalink document of the file the server named (RFC 6249 `rel=describedby`).
    var metalink: URL? = nil

    /// A server digest field that was not trusted, and why.
    struct IgnoredDigest: Sendable, Equatable, CustomStringConvertible {
        /// The header field's name, as ``ServerDigests/HeaderName`` spells it.
        var header: String
        var reason: String

        /// `x-amz-checksum-sha256 header: composite checksum of 3 parts, …`.
        var description: String { "\(header) header: \(reason)" }
    }

    /// Whether ``lastModified`` lay well before the server's `Date` at the probe, so that it can stand
    /// for this version in `If-Range` (``HTTPDate/isStrongValidator(lastModified:date:)``).
    var lastModifiedIsStrong = false

    /// What `If-Range` carries: the strong ETag, else a Last-Modified old enough to be strong, else
    /// nothing. Without one the server answers every range as asked, and each answer's validators are
    /// still checked against the pinned ones (``changeReason(in:)``) before a byte of it is written.
    var ifRangeValidator: String? { etag ?? (lastModifiedIsStrong ? lastModified : nil) }

    /// Why `head` (an answer carrying bytes of the file) belongs to another version than the one
    /// pinned at the probe, or nil when nothing says so. The strong ETag decides when the probe saw
    /// one; otherwise `Last-Modified` does. A validator the answer leaves out proves nothing either way
    /// (the `If-Range` sent with every range request still guards it).
    ///
    /// This does not trust the server to honour `If-Range`: some answer a stale range request with a
    /// 206 of the current version, carrying that version's validators.
    ///
    /// A strong ETag pinned at the probe must be on every answer: a 206 carries the ETag a 200 would
    /// (RFC 9110, 15.3.7), so an answer without it is another version that leaves the tag out (as
    /// resuming judges it). A weak tag pinned at the probe is compared by its opaque part: weak tags
    /// match weakly, and two different ones are two versions.
    func changeReason(in head: ResponseHead) -> String? {
        if let pinned = etag, head.headers["ETag"] == nil {
            return "the server no longer sends its ETag \(pinned)"
        }
        if let sent = head.headers["ETag"] {
            if let pinned = etag {
                return sent == pinned ? nil : "its ETag changed from \(pinned) to \(sent)"
            }
            if let pinned = weakETag, Self.opaqueTag(sent) != Self.opaqueTag(pinned) {
                return "its ETag changed from \(pinned) to \(sent)"
            }
        }
        if let pinned = lastModified, let sent = head.headers["Last-Modified"], sent != pinned {
            return "its Last-Modified changed from \(pinned) to \(sent)"
        }
        return nil
    }

    /// An entity tag without its weakness mark: `W/"a"` and `"a"` match weakly (RFC 9110, 8.8.3.2).
    static func opaqueTag(_ tag: String) -> Substring {
        tag.hasPrefix("W/") ? tag.dropFirst(2) : tag[...]
    }

    /// Whether `head` proves it is of the version pinned at the probe: it carries the strong ETag
    /// the probe saw or, without one, the `Last-Modified` that stands for it in `If-Range`. An answer
    /// without such a validator proves nothing (``changeReason(in:)`` only finds contradictions).
    func isSameVersion(_ head: ResponseHead) -> Bool {
        if let etag { return Self.validators(of: head).etag == etag }
        guard lastModifiedIsStrong, let lastModified else { return false }
        return head.headers["Last-Modified"] == lastModified
    }

    /// Reads validators from a response head; weak ETags are not validators for ranges.
    static func validators(of head: ResponseHead) -> (etag: String?, lastModified: String?) {
        var etag = head.headers["ETag"]
        if let value = etag, value.hasPrefix("W/") || !value.hasPrefix("\"") { etag = nil }
        return (etag, head.headers["Last-Modified"])
    }

    /// The ETag of `head` when it is no strong validator (a weak or malformed one), for
    /// ``weakETag``.
    static func weakTag(of head: ResponseHead) -> String? {
        guard let value = head.headers["ETag"], validators(of: head).etag == nil else { return nil }
        return value
    }
}
