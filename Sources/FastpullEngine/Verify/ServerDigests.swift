import FastpullHTTP
import FoundationEssentials

/// Finds the digests a server offers for the whole file in a response head, and decides which can be
/// trusted to verify it.
///
/// Trusted, when the response is 2xx and has no `Content-Encoding` other than `identity`:
///
/// - `Repr-Digest` (RFC 9530), `sha-256=:BASE64:, sha-512=:BASE64:`: also on a 206, since it describes
///   the whole representation.
/// - `Content-Digest` (RFC 9530), same form: only when the response carries the full representation
///   (never a 206).
/// - `Digest` (RFC 3230), `SHA-256=BASE64, MD5=BASE64`: names case-insensitive, `SHA` is SHA-1, hex
///   values of the exact length are accepted too.
/// - `Content-MD5`, `BASE64`: only for the full representation (on a 206 it covers the part).
/// - `x-goog-hash`, `crc32c=BASE64,md5=BASE64`, possibly over several lines: not when Cloud Storage
///   decoded a gzip-stored object for this response (`x-goog-stored-content-encoding`).
/// - `x-amz-checksum-sha256`, `-sha1`, `-crc32c`, `BASE64`: not composite (`BASE64-N`, or
///   `x-amz-checksum-type: COMPOSITE`).
/// - `x-ms-blob-content-md5`, `BASE64`: Azure Blob Storage's MD5 of the whole blob.
/// - `ETag`, `X-Linked-Etag`, `"<64 hex digits>"`: strong only, read as SHA-256 (Hugging Face).
///
/// RFC 9530 algorithms `sha-256`, `sha-512`, `sha` (SHA-1), `md5` and `crc32c` (4 bytes big-endian)
/// are understood. A 3xx response contributes only `X-Linked-Etag`, which describes the redirect's
/// target; other statuses contribute nothing. Anything that looks like a digest but cannot be trusted
/// (weak or multipart ETags, composite checksums, encoded bodies, partial-content digests, unknown
/// algorithms, malformed base64, wrong lengths) is listed in `ignored` with a reason, never thrown.
package enum ServerDigests {
    /// The `Want-Repr-Digest` value sent with the probe (RFC 9530 §4): SHA-256 preferred, since
    /// Fastpull computes it for every download anyway; SHA-512 accepted.
    static let wantReprDigest = "sha-256=10, sha-512=3"

    /// The header fields to add to the probe request: `Want-Repr-Digest`, and `Want-Digest` for servers
    /// that still implement RFC 3230.
    static let probeRequestHeaders: [(name: String, value: String)] = [
        (name: "Want-Repr-Digest", value: wantReprDigest),
        (name: "Want-Digest", value: "sha-256;q=1, sha-512;q=0.3"),
    ]

    /// The header fields to add to the probe of `url`: ``probeRequestHeaders``, and
    /// `x-amz-checksum-mode: ENABLED`, which makes S3 send the object's checksums, unless the URL is
    /// presigned (a presigned request must carry only the `x-amz-` fields it was signed with).
    static func probeRequestHeaders(for url: URL) -> [(name: String, value: String)] {
        guard !isPresigned(url) else { return probeRequestHeaders }
        return probeRequestHeaders + [(name: "x-amz-checksum-mode", value: "ENABLED")]
    }

    /// Whether `url` carries a signature in its query: AWS SigV4 or SigV2, Google Cloud Storage or an
    /// Azure shared access signature.
    static func isPresigned(_ url: URL) -> Bool {
        guard url.query(percentEncoded: true) != nil else { return false }
        let names =
            URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.map { $0.name.lowercased() }
            ?? []
        return names.contains {
            ["x-amz-signature", "x-amz-credential", "signature", "x-goog-signature", "sig"].contains($0)
        }
    }

    /// The digests in `head` that describe the whole file, and the digest-like fields that were not
    /// trusted with the reason why.
    ///
    /// - Parameter isFullRepresentation: whether the response carries (or, for HEAD, would carry) the
    ///   whole file: a 200 to a GET, or a HEAD. False for a 206, whose `Content-Digest` and
    ///   `Content-MD5` describe only the part sent.
    static func expectations(from head: ResponseHead, isFullRepresentation: Bool)
        -> (trusted: [ChecksumExpectation], ignored: [(header: String, reason: String)])
    {
        var collector = Collector(head: head)
        switch head.status {
        case 200..<300:
            break
        case 300..<400:
            collector.etag(name: HeaderName.linkedETag)
            return collector.result
        default:
            return collector.result
        }
        let codings = head.headers.listElements(for: "Content-Encoding").filter {
            !HTTPHeaders.namesEqual($0, "identity")
        }
        if !codings.isEmpty {
            collector.ignoreAll(
                reason: "the response has Content-Encoding: \(codings.joined(separator: ", ")), "
                    + "so the digest may not describe the bytes saved")
            return collector.result
        }
        let full = isFullRepresentation && head.status != 206
        let partialReason =
            head.status == 206
            ? "describes only the partial content of this 206 response"
            : "describes only this response's content, which is not the whole file"
        collector.structured(name: HeaderName.reprDigest)
        if full {
            collector.structured(name: HeaderName.contentDigest)
        } else {
            collector.ignore(HeaderName.contentDigest, reason: partialReason)
        }
        collector.legacyDigest()
        if full {
            collector.single(name: HeaderName.contentMD5, algorithm: .md5, allowHex: true)
        } else {
            collector.ignore(HeaderName.contentMD5, reason: partialReason)
        }
        collector.googleHash()
        collector.amazonChecksums()
        collector.single(name: HeaderName.azureMD5, algorithm: .md5, allowHex: false)
        collector.etag(name: HeaderName.etag)
        collector.etag(name: HeaderName.linkedETag)
        return collector.result
    }

    /// Header names as reported in expectations and in `ignored`.
    enum HeaderName {
        static let reprDigest = "Repr-Digest"
        static let contentDigest = "Content-Digest"
        static let digest = "Digest"
        static let contentMD5 = "Content-MD5"
        static let googleHash = "x-goog-hash"
        static let amazonSHA256 = "x-amz-checksum-sha256"
        static let amazonSHA1 = "x-amz-checksum-sha1"
        static let amazonCRC32C = "x-amz-checksum-crc32c"
        static let amazonUnsupported = ["x-amz-checksum-crc32", "x-amz-checksum-crc64nvme"]
        static let azureMD5 = "x-ms-blob-content-md5"
        static let etag = "ETag"
        static let linkedETag = "X-Linked-Etag"
    }

    private struct Collector {
        let head: ResponseHead
        var trusted: [ChecksumExpectation] = []
        var ignored: [(header: String, reason: String)] = []

        init(head: ResponseHead) {
            self.head = head
        }

        var result: (trusted: [ChecksumExpectation], ignored: [(header: String, reason: String)]) {
            (trusted, ignored)
        }

        private var headers: HTTPHeaders { head.headers }

        mutating func trust(_ algorithm: Digest.Algorithm, _ bytes: [UInt8], header: String) {
            let expectation = ChecksumExpectation(Checksum(algorithm, bytes: bytes), source: .header(header))
            if !trusted.contains(expectation) {
                trusted.append(expectation)
            }
        }

        mutating func ignore(_ header: String, reason: String) {
            guard headers.contains(name: header) else { return }
            ignored.append((header: header, reason: reason))
        }

        /// Every digest field present, for a response whose body is content-encoded.
        mutating func ignoreAll(reason: String) {
            let names = [
                HeaderName.reprDigest, HeaderName.contentDigest, HeaderName.digest, HeaderName.contentMD5,
                HeaderName.googleHash, HeaderName.amazonSHA256, HeaderName.amazonSHA1,
                HeaderName.amazonCRC32C,
                HeaderName.azureMD5,
            ]
            for name in names {
                ignore(name, reason: reason)
            }
            for name in [HeaderName.etag, HeaderName.linkedETag]
            where headers.values(for: name).contains(where: Self.looksLikeSHA256ETag) {
                ignored.append((header: name, reason: reason))
            }
        }

        /// `Repr-Digest` / `Content-Digest`: an RFC 8941 dictionary of byte sequences.
        mutating func structured(name: String) {
            let values = headers.values(for: name)
            guard !values.isEmpty else { return }
            guard let members = StructuredFieldDictionary.parse(values) else {
                ignored.append((header: name, reason: "not a valid structured-field dictionary"))
                return
            }
            for (key, value) in members {
                guard let algorithm = Self.rfc9530Algorithm(key) else {
                    ignored.append((header: name, reason: "unsupported algorithm \(key)"))
                    continue
                }
                guard case .byteSequence(let text) = value else {
                    ignored.append((header: name, reason: "\(key) is not a byte sequence (:BASE64:)"))
                    continue
                }
                decode(text, as: algorithm, label: key, header: name, allowHex: false)
            }
        }

        /// `Digest: SHA-256=BASE64, MD5=BASE64` (RFC 3230).
        mutating func legacyDigest() {
            let name = HeaderName.digest
            for element in headers.listElements(for: name) {
                guard let equals = element.firstIndex(of: "=") else {
                    ignored.append((header: name, reason: "'\(element)' is not ALGORITHM=VALUE"))
                    continue
                }
                let label = String(element[..<equals])
                let value = element[element.index(after: equals)...]
                guard let algorithm = Self.rfc3230Algorithm(label) else {
                    ignored.append((header: name, reason: "unsupported algorithm \(label)"))
                    continue
                }
                decode(value, as: algorithm, label: label, header: name, allowHex: true)
            }
        }

        /// A field whose whole value is one digest (`Content-MD5`, `x-ms-blob-content-md5`).
        mutating func single(name: String, algorithm: Digest.Algorithm, allowHex: Bool) {
            for value in headers.values(for: name) {
                let trimmed = HTTPHeaders.trimmingWhitespace(Substring(value))
                decode(trimmed, as: algorithm, label: algorithm.name, header: name, allowHex: allowHex)
            }
        }

        /// `x-goog-hash: crc32c=BASE64,md5=BASE64`, possibly over several lines.
        mutating func googleHash() {
            let name = HeaderName.googleHash
            guard headers.contains(name: name) else { return }
            let stored = headers.listElements(for: "x-goog-stored-content-encoding").filter {
                !HTTPHeaders.namesEqual($0, "identity")
            }
            guard stored.isEmpty else {
                ignored.append(
                    (
                        header: name,
                        reason:
                            "the object is stored with Content-Encoding: \(stored.joined(separator: ", ")) "
                            + "and was decoded for this response, so its hashes describe the stored bytes"
                    ))
                return
            }
            for element in headers.listElements(for: name) {
                guard let equals = element.firstIndex(of: "=") else {
                    ignored.append((header: name, reason: "'\(element)' is not ALGORITHM=BASE64"))
                    continue
                }
                let label = element[..<equals].lowercased()
                let value = element[element.index(after: equals)...]
                let algorithm: Digest.Algorithm
                switch label {
                case "crc32c": algorithm = .crc32c
                case "md5": algorithm = .md5
                default:
                    ignored.append((header: name, reason: "unsupported algorithm \(label)"))
                    continue
                }
                decode(value, as: algorithm, label: label, header: name, allowHex: false)
            }
        }

        /// `x-amz-checksum-*`, unless composite.
        mutating func amazonChecksums() {
            let fields: [(String, Digest.Algorithm)] = [
                (HeaderName.amazonSHA256, .sha256), (HeaderName.amazonSHA1, .sha1),
                (HeaderName.amazonCRC32C, .crc32c),
            ]
            let types = headers.listElements(for: "x-amz-checksum-type")
            // A multipart upload's checksum is of its parts' checksums unless S3 says FULL_OBJECT; the
            // ETag ending in -N gives the upload away even where the type is not sent.
            let multipart = headers.values(for: HeaderName.etag).contains {
                Self.isMultipartETag(HTTPHeaders.trimmingWhitespace(Substring($0)))
            }
            let composite =
                types.contains { HTTPHeaders.namesEqual($0, "COMPOSITE") }
                || (multipart && !types.contains { HTTPHeaders.namesEqual($0, "FULL_OBJECT") })
            for (name, algorithm) in fields {
                for value in headers.values(for: name) {
                    let trimmed = HTTPHeaders.trimmingWhitespace(Substring(value))
                    if let dash = trimmed.lastIndex(of: "-"),
                        let parts = Int(trimmed[trimmed.index(after: dash)...])
                    {
                        ignored.append(
                            (
                                header: name,
                                reason: "composite checksum of \(parts) parts, not of the whole object"
                            ))
                    } else if composite {
                        ignored.append(
                            (
                                header: name,
                                reason: "a multipart upload's checksum (COMPOSITE), of its parts' checksums"
                            ))
                    } else {
                        decode(trimmed, as: algorithm, label: algorithm.name, header: name, allowHex: false)
                    }
                }
            }
            for name in HeaderName.amazonUnsupported {
                ignore(name, reason: "unsupported algorithm")
            }
        }

        /// A strong ETag of exactly 64 hexadecimal digits is taken as the SHA-256 of the content.
        mutating func etag(name: String) {
            for value in headers.values(for: name) {
                let trimmed = HTTPHeaders.trimmingWhitespace(Substring(value))
                if let bytes = Self.sha256ETag(trimmed) {
                    trust(.sha256, bytes, header: name)
                } else if trimmed.hasPrefix("W/"), Self.sha256ETag(trimmed.dropFirst(2)) != nil {
                    ignored.append((header: name, reason: "a weak ETag does not promise identical bytes"))
                } else if Self.isMultipartETag(trimmed) {
                    ignored.append(
                        (header: name, reason: "a multipart upload's ETag is not a digest of the whole file"))
                }
            }
        }

        private mutating func decode(
            _ value: some StringProtocol, as algorithm: Digest.Algorithm, label: String, header: String,
            allowHex: Bool
        ) {
            let length = algorithm.digestLength
            if allowHex, Digest.isHex(value, count: 2 * length), let bytes = Digest.bytes(hex: value) {
                trust(algorithm, bytes, header: header)
                return
            }
            guard let bytes = Base64.decode(value) else {
                ignored.append((header: header, reason: "\(label) value '\(value)' is not valid base64"))
                return
            }
            guard bytes.count == length else {
                ignored.append(
                    (
                        header: header,
                        reason: "\(label) value decodes to \(bytes.count) bytes, "
                            + "a \(algorithm) digest has \(length)"
                    ))
                return
            }
            trust(algorithm, bytes, header: header)
        }

        /// `"<64 hex>"` → its bytes.
        static func sha256ETag(_ value: some StringProtocol) -> [UInt8]? {
            guard value.utf8.count == 66, value.hasPrefix("\""), value.hasSuffix("\"") else { return nil }
            let inner = value.dropFirst().dropLast()
            guard Digest.isHex(inner, count: 64) else { return nil }
            return Digest.bytes(hex: inner)
        }

        /// `"<64 hex>"` or `W/"<64 hex>"`.
        static func looksLikeSHA256ETag(_ value: String) -> Bool {
            let trimmed = HTTPHeaders.trimmingWhitespace(Substring(value))
            return sha256ETag(trimmed.hasPrefix("W/") ? trimmed.dropFirst(2) : trimmed) != nil
        }

        /// `"<hex>-<parts>"`, the S3 multipart form (optionally weak).
        static func isMultipartETag(_ value: Substring) -> Bool {
            var bytes = value.utf8[...]
            if bytes.starts(with: "W/".utf8) { bytes = bytes.dropFirst(2) }
            guard bytes.count >= 4, bytes.first == UInt8(ascii: "\""), bytes.last == UInt8(ascii: "\"")
            else { return false }
            let inner = bytes.dropFirst().dropLast()
            guard let dash = inner.lastIndex(of: UInt8(ascii: "-")) else { return false }
            let hex = inner[..<dash]
            let parts = inner[inner.index(after: dash)...]
            func isHexDigit(_ byte: UInt8) -> Bool {
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
                    UInt8(ascii: "A")...UInt8(ascii: "F"):
                    return true
                default: return false
                }
            }
            return !hex.isEmpty && hex.count % 2 == 0 && hex.allSatisfy(isHexDigit) && !parts.isEmpty
                && parts.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
        }

        /// RFC 9530 registry keys (lowercase by the structured-field grammar).
        static func rfc9530Algorithm(_ key: String) -> Digest.Algorithm? {
            switch key {
            case "sha-256": return .sha256
            case "sha-512": return .sha512
            case "sha": return .sha1
            case "md5": return .md5
            case "crc32c": return .crc32c
            default: return nil
            }
        }

        /// RFC 3230 registry names, case-insensitive.
        static func rfc3230Algorithm(_ label: String) -> Digest.Algorithm? {
            switch label.lowercased() {
            case "sha-256", "id-sha-256": return .sha256
            case "sha-512", "id-sha-512": return .sha512
            case "sha": return .sha1
            case "md5": return .md5
            case "crc32c": return .crc32c
            default: return nil
            }
        }
    }
}
