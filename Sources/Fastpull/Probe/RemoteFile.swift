import Foundation

/// What the probe learned about the remote file.
struct RemoteFile: Sendable, Equatable {
    /// The URL the user asked for.
    var url: URL
    /// The URL after redirects; every later request goes here.
    var finalURL: URL
    /// The size in bytes, when the server told it.
    var size: Int64?
    /// Whether the server answers byte-range requests with 206.
    var acceptsRanges: Bool
    /// A strong entity tag, if the server sent one.
    var etag: String?
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

    /// A server digest field that was not trusted, and why.
    struct IgnoredDigest: Sendable, Equatable, CustomStringConvertible {
        /// The header field's name, as ``ServerDigests/HeaderName`` spells it.
        var header: String
        var reason: String

        /// `x-amz-checksum-sha256 header: composite checksum of 3 parts, …`.
        var description: String { "\(header) header: \(reason)" }
    }

    /// What `If-Range` carries: the strong ETag, else Last-Modified, else nothing.
    var ifRangeValidator: String? { etag ?? lastModified }

    /// Reads validators from a response head; weak ETags are not validators for ranges.
    static func validators(of head: ResponseHead) -> (etag: String?, lastModified: String?) {
        var etag = head.headers["ETag"]
        if let value = etag, value.hasPrefix("W/") || !value.hasPrefix("\"") { etag = nil }
        return (etag, head.headers["Last-Modified"])
    }
}
