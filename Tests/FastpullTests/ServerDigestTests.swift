import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP

@Suite("ServerDigests")
struct ServerDigestTests {
    // Digests of the fixtures' body, "The quick brown fox jumps over the lazy dog".
    static let sha256 = "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592"
    static let sha512 =
        "07e547d9586f6a73f73fbac0435ed76951218fb7d0c8d788a309d785436bbb64"
        + "2e93a252a954f23912547d1e8a3b5ed6e1bfd7097821233fa0538f3db854fee6"
    static let md5 = "9e107d9d372bb6826bd81d3542a419d6"
    static let crc32c = "22620404"
    static let body = Array("The quick brown fox jumps over the lazy dog".utf8)

    /// A recorded head from `Fixtures/digest-headers`, parsed by the real response-head parser.
    static func fixture(_ name: String) throws -> ResponseHead {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/digest-headers/\(name)")
        let bytes = Array(try String(contentsOf: url, encoding: .utf8).utf8)
        var parser = ResponseHeadParser()
        let progress = try bytes.withUnsafeBytes { raw in try parser.feed(raw) }
        guard case .complete(let head, let consumed) = progress else {
            throw FixtureError(message: "\(name) is not a complete response head")
        }
        #expect(consumed == bytes.count, "\(name) has bytes after its head")
        return head
    }

    struct FixtureError: Error {
        var message: String
    }

    static func head(status: Int = 200, _ fields: [(String, String)]) -> ResponseHead {
        ResponseHead(
            versionMajor: 1, versionMinor: 1, status: status, reason: "",
            headers: HTTPHeaders(fields.map { (name: $0.0, value: $0.1) }))
    }

    /// `"<header>: <algo>=<hex>"` for each trusted expectation.
    static func trusted(_ head: ResponseHead, full: Bool) -> [String] {
        ServerDigests.expectations(from: head, isFullRepresentation: full).trusted.map { expectation in
            guard case .header(let name) = expectation.source else { return "not a header: \(expectation)" }
            return "\(name): \(expectation.checksum)"
        }
    }

    static func ignored(_ head: ResponseHead, full: Bool) -> [(header: String, reason: String)] {
        ServerDigests.expectations(from: head, isFullRepresentation: full).ignored
    }

    /// Checks the ignored list: header names in order, each reason containing the given text.
    static func expectIgnored(
        _ actual: [(header: String, reason: String)], _ expected: [(String, String)],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(actual.map(\.header) == expected.map(\.0), sourceLocation: sourceLocation)
        for (entry, (_, part)) in zip(actual, expected) {
            #expect(
                entry.reason.contains(part), "'\(entry.reason)' should mention '\(part)'",
                sourceLocation: sourceLocation)
        }
    }

    // MARK: - Recorded responses

    @Test func reprAndContentDigestOnA200() throws {
        let head = try Self.fixture("repr-digest-200.txt")
        #expect(
            Self.trusted(head, full: true) == [
                "Repr-Digest: sha256=\(Self.sha256)", "Repr-Digest: sha512=\(Self.sha512)",
                "Content-Digest: sha256=\(Self.sha256)",
            ])
        #expect(Self.ignored(head, full: true).isEmpty)
        // The same head where the caller says the body is not the full representation.
        #expect(
            Self.trusted(head, full: false) == [
                "Repr-Digest: sha256=\(Self.sha256)", "Repr-Digest: sha512=\(Self.sha512)",
            ])
        Self.expectIgnored(Self.ignored(head, full: false), [("Content-Digest", "not the whole file")])
    }

    @Test func contentDigestOfA206IsIgnoredButReprDigestIsKept() throws {
        let head = try Self.fixture("content-digest-206.txt")
        let expected = ["Repr-Digest: sha256=\(Self.sha256)", "Repr-Digest: sha512=\(Self.sha512)"]
        #expect(Self.trusted(head, full: false) == expected)
        Self.expectIgnored(
            Self.ignored(head, full: false), [("Content-Digest", "partial content of this 206")])
        // A 206 is never the full representation, whatever the caller says.
        #expect(Self.trusted(head, full: true) == expected)
        Self.expectIgnored(Self.ignored(head, full: true), [("Content-Digest", "partial")])
    }

    @Test func contentEncodedResponseIgnoresEverything() throws {
        let head = try Self.fixture("content-digest-gzip.txt")
        #expect(Self.trusted(head, full: true).isEmpty)
        Self.expectIgnored(
            Self.ignored(head, full: true),
            [
                ("Repr-Digest", "Content-Encoding: gzip"), ("Content-Digest", "Content-Encoding: gzip"),
                ("Content-MD5", "Content-Encoding: gzip"), ("ETag", "Content-Encoding: gzip"),
            ])
    }

    @Test func legacyDigestAndContentMD5() throws {
        let head = try Self.fixture("legacy-digest.txt")
        #expect(
            Self.trusted(head, full: true) == [
                "Digest: sha256=\(Self.sha256)", "Digest: md5=\(Self.md5)", "Digest: sha512=\(Self.sha512)",
                "Content-MD5: md5=\(Self.md5)",
            ])
        Self.expectIgnored(Self.ignored(head, full: true), [("Digest", "unsupported algorithm UNIXsum")])
    }

    @Test func googleCloudStorageObject() throws {
        let head = try Self.fixture("gcs-object.txt")
        #expect(
            Self.trusted(head, full: true) == [
                "x-goog-hash: crc32c=\(Self.crc32c)", "x-goog-hash: md5=\(Self.md5)",
            ])
        // The md5-looking ETag is not taken as a digest, nor reported.
        #expect(Self.ignored(head, full: true).isEmpty)
    }

    @Test func googleCloudStorageRangeCarriesWholeObjectHashes() throws {
        let head = try Self.fixture("gcs-range-206.txt")
        #expect(
            Self.trusted(head, full: false) == [
                "x-goog-hash: crc32c=\(Self.crc32c)", "x-goog-hash: md5=\(Self.md5)",
            ])
        #expect(Self.ignored(head, full: false).isEmpty)
    }

    @Test func googleCloudStorageCompositeObjectHasOnlyCRC32C() throws {
        let head = try Self.fixture("gcs-composite.txt")
        #expect(Self.trusted(head, full: true) == ["x-goog-hash: crc32c=\(Self.crc32c)"])
        #expect(Self.ignored(head, full: true).isEmpty)
    }

    @Test func googleCloudStorageTranscodedObjectIsIgnored() throws {
        let head = try Self.fixture("gcs-transcoded.txt")
        #expect(Self.trusted(head, full: true).isEmpty)
        Self.expectIgnored(
            Self.ignored(head, full: true), [("x-goog-hash", "stored with Content-Encoding: gzip")])
    }

    @Test func s3FullObjectChecksums() throws {
        let sha = try Self.fixture("s3-full-object.txt")
        #expect(Self.trusted(sha, full: true) == ["x-amz-checksum-sha256: sha256=\(Self.sha256)"])
        #expect(Self.ignored(sha, full: true).isEmpty)
        let crc = try Self.fixture("s3-crc32c-full-object.txt")
        #expect(Self.trusted(crc, full: true) == ["x-amz-checksum-crc32c: crc32c=\(Self.crc32c)"])
        Self.expectIgnored(Self.ignored(crc, full: true), [("ETag", "multipart")])
    }

    @Test func s3CompositeChecksumIsIgnored() throws {
        let head = try Self.fixture("s3-composite.txt")
        #expect(Self.trusted(head, full: true).isEmpty)
        Self.expectIgnored(
            Self.ignored(head, full: true),
            [("x-amz-checksum-sha256", "composite checksum of 3 parts"), ("ETag", "multipart")])
    }

    @Test func huggingFaceLinkedETagOnTheRedirect() throws {
        let head = try Self.fixture("huggingface-lfs-redirect.txt")
        #expect(head.status == 302)
        #expect(Self.trusted(head, full: true) == ["X-Linked-Etag: sha256=\(Self.sha256)"])
        #expect(Self.ignored(head, full: true).isEmpty)
    }

    @Test func huggingFaceCDNETag() throws {
        let head = try Self.fixture("huggingface-cdn.txt")
        #expect(Self.trusted(head, full: true) == ["ETag: sha256=\(Self.sha256)"])
        #expect(Self.trusted(head, full: false) == ["ETag: sha256=\(Self.sha256)"])
    }

    @Test func gitBlobETagIsNotADigest() throws {
        let head = try Self.fixture("huggingface-small-file.txt")
        #expect(Self.trusted(head, full: true).isEmpty)
        #expect(Self.ignored(head, full: true).isEmpty)
    }

    @Test func azureRangeMD5IsIgnoredButBlobMD5IsKept() throws {
        let head = try Self.fixture("azure-blob-range.txt")
        #expect(Self.trusted(head, full: false) == ["x-ms-blob-content-md5: md5=\(Self.md5)"])
        Self.expectIgnored(Self.ignored(head, full: false), [("Content-MD5", "partial content of this 206")])
    }

    @Test func malformedAndUntrustworthyValues() throws {
        let head = try Self.fixture("malformed-digests.txt")
        #expect(
            Self.trusted(head, full: true) == [
                "Repr-Digest: sha512=\(Self.sha512)", "x-amz-checksum-crc32c: crc32c=\(Self.crc32c)",
            ])
        Self.expectIgnored(
            Self.ignored(head, full: true),
            [
                ("Repr-Digest", "sha-256 value decodes to 3 bytes, a sha256 digest has 32"),
                ("Repr-Digest", "unsupported algorithm unixsum"),
                ("Repr-Digest", "md5 is not a byte sequence"),
                ("Content-Digest", "not a valid structured-field dictionary"),
                ("Digest", "SHA-256 value decodes to 31 bytes"),
                ("Digest", "MD5 value 'nhB9nTcrtoJr2B01QqQZ1g=' is not valid base64"),
                ("Content-MD5", "is not valid base64"),
                ("x-goog-hash", "crc32c value 'ImIEBA=' is not valid base64"),
                ("x-goog-hash", "'md5' is not ALGORITHM=BASE64"),
                ("x-amz-checksum-crc64nvme", "unsupported"),
                ("ETag", "weak"),
            ])
    }

    @Test func plainServerOffersNothing() throws {
        let head = try Self.fixture("nginx-plain.txt")
        #expect(Self.trusted(head, full: true).isEmpty)
        #expect(Self.ignored(head, full: true).isEmpty)
    }

    /// Every trusted value in the fixtures is a real digest of the body.
    @Test func trustedFixtureValuesMatchTheBody() throws {
        let names = [
            "repr-digest-200.txt", "content-digest-206.txt", "legacy-digest.txt", "gcs-object.txt",
            "gcs-range-206.txt", "gcs-composite.txt", "s3-full-object.txt", "s3-crc32c-full-object.txt",
            "huggingface-lfs-redirect.txt", "huggingface-cdn.txt", "azure-blob-range.txt",
            "malformed-digests.txt",
        ]
        let set = DigestSet(Digest.Algorithm.allCases)
        set.update(Self.body)
        let digests = set.finalize()
        for name in names {
            let head = try Self.fixture(name)
            let trusted = ServerDigests.expectations(from: head, isFullRepresentation: head.status == 200)
                .trusted
            #expect(!trusted.isEmpty, "\(name)")
            for expectation in trusted {
                #expect(expectation.verdict(for: digests) == .matched, "\(name): \(expectation)")
            }
        }
    }

    // MARK: - Rules, on hand-built heads

    @Test func onlySuccessfulResponsesCount() {
        let fields = [
            ("Repr-Digest", "sha-256=:16j7swfXgJRpypq8sAguT41WUeRtPNt2LQLQvzfJ5ZI=:"),
            ("ETag", "\"\(Self.sha256)\""), ("X-Linked-Etag", "\"\(Self.sha256)\""),
        ]
        #expect(Self.trusted(Self.head(status: 404, fields), full: true).isEmpty)
        #expect(Self.ignored(Self.head(status: 404, fields), full: true).isEmpty)
        #expect(Self.trusted(Self.head(status: 500, fields), full: true).isEmpty)
        // A redirect describes itself; only X-Linked-Etag speaks for its target.
        #expect(
            Self.trusted(Self.head(status: 307, fields), full: true) == [
                "X-Linked-Etag: sha256=\(Self.sha256)"
            ])
        #expect(
            Self.trusted(Self.head(status: 200, fields), full: true) == [
                "Repr-Digest: sha256=\(Self.sha256)", "ETag: sha256=\(Self.sha256)",
                "X-Linked-Etag: sha256=\(Self.sha256)",
            ])
    }

    @Test func identityEncodingIsNotAnEncoding() {
        let fields = [("Content-Encoding", "identity"), ("Content-MD5", "nhB9nTcrtoJr2B01QqQZ1g==")]
        #expect(Self.trusted(Self.head(fields), full: true) == ["Content-MD5: md5=\(Self.md5)"])
        let encoded = [("Content-Encoding", "identity, br"), ("Content-MD5", "nhB9nTcrtoJr2B01QqQZ1g==")]
        #expect(Self.trusted(Self.head(encoded), full: true).isEmpty)
        Self.expectIgnored(
            Self.ignored(Self.head(encoded), full: true), [("Content-MD5", "Content-Encoding: br")])
    }

    @Test func etagShapes() {
        let upper = Self.head([("ETag", "\"\(Self.sha256.uppercased())\"")])
        #expect(Self.trusted(upper, full: true) == ["ETag: sha256=\(Self.sha256)"])
        for value in [
            Self.sha256, "\"\(Self.sha256)0\"", "\"\(Self.sha256.dropLast())\"", "\"\(Self.md5)\"", "\"\"",
        ] {
            let head = Self.head([("ETag", value)])
            #expect(Self.trusted(head, full: true).isEmpty, "\(value)")
            #expect(Self.ignored(head, full: true).isEmpty, "\(value)")
        }
        let weak = Self.head([("ETag", "W/\"\(Self.sha256)\"")])
        Self.expectIgnored(Self.ignored(weak, full: true), [("ETag", "weak")])
        let weakMultipart = Self.head([("ETag", "W/\"\(Self.md5)-12\"")])
        Self.expectIgnored(Self.ignored(weakMultipart, full: true), [("ETag", "multipart")])
        let linkedWeak = Self.head(status: 302, [("X-Linked-Etag", "W/\"\(Self.sha256)\"")])
        Self.expectIgnored(Self.ignored(linkedWeak, full: true), [("X-Linked-Etag", "weak")])
    }

    /// S3's multipart form is `"<even count of hex digits>-<decimal parts>"`; nginx's
    /// `"<mtime hex>-<size hex>"` and other look-alikes are not it.
    @Test func multipartETagShapes() {
        for value in ["\"\(Self.md5.uppercased())-3\"", "W/\"ab-1\"", "\"0a1b-250\""] {
            Self.expectIgnored(
                Self.ignored(Self.head([("ETag", value)]), full: true), [("ETag", "multipart")])
        }
        for value in [
            "\"6b107639-3a027\"", "\"abc-2\"", "\"-2\"", "\"ab-\"", "\"ab-2x\"", "\"zz-2\"", "ab-2",
            "\"ab-٣\"",
        ] {
            #expect(Self.ignored(Self.head([("ETag", value)]), full: true).isEmpty, "\(value)")
        }
    }

    @Test func amazonCompositeByTypeHeader() {
        let head = Self.head([
            ("x-amz-checksum-crc32c", "ImIEBA=="), ("x-amz-checksum-type", "COMPOSITE"),
            ("x-amz-checksum-crc32", "NhCmhg=="),
        ])
        #expect(Self.trusted(head, full: true).isEmpty)
        Self.expectIgnored(
            Self.ignored(head, full: true),
            [("x-amz-checksum-crc32c", "COMPOSITE"), ("x-amz-checksum-crc32", "unsupported")])
        let sha1 = Self.head([("x-amz-checksum-sha1", "L9ThxnotKPzthJ7hu3bnORuT6xI=")])
        #expect(
            Self.trusted(sha1, full: true) == [
                "x-amz-checksum-sha1: sha1=2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"
            ])
    }

    @Test func legacyDigestAcceptsHexAndAnyCase() {
        let head = Self.head([
            ("Digest", "sha-256=\(Self.sha256.uppercased())"), ("digest", "md5=nhB9nTcrtoJr2B01QqQZ1g=="),
            ("DIGEST", "SHA=L9ThxnotKPzthJ7hu3bnORuT6xI=, CRC32c=ImIEBA==, adler32=AAAAAA=="),
        ])
        #expect(
            Self.trusted(head, full: true) == [
                "Digest: sha256=\(Self.sha256)", "Digest: md5=\(Self.md5)",
                "Digest: sha1=2fd4e1c67a2d28fced849ee1bb76e7391b93eb12", "Digest: crc32c=\(Self.crc32c)",
            ])
        Self.expectIgnored(Self.ignored(head, full: true), [("Digest", "unsupported algorithm adler32")])
        let garbage = Self.head([("Digest", "justtext")])
        Self.expectIgnored(Self.ignored(garbage, full: true), [("Digest", "not ALGORITHM=VALUE")])
    }

    @Test func googleHashVariants() {
        let head = Self.head([
            ("X-Goog-Hash", "crc32c=ImIEBA==, md5=nhB9nTcrtoJr2B01QqQZ1g=="),
            ("x-goog-hash", "crc32c=ImIEBA=="),
            ("x-goog-hash", "sha256=16j7swfXgJRpypq8sAguT41WUeRtPNt2LQLQvzfJ5ZI="),
        ])
        // The repeated crc32c is reported once.
        #expect(
            Self.trusted(head, full: true) == [
                "x-goog-hash: crc32c=\(Self.crc32c)", "x-goog-hash: md5=\(Self.md5)",
            ])
        Self.expectIgnored(Self.ignored(head, full: true), [("x-goog-hash", "unsupported algorithm sha256")])
        let wrongLength = Self.head([("x-goog-hash", "crc32c=nhB9nTcrtoJr2B01QqQZ1g==")])
        Self.expectIgnored(
            Self.ignored(wrongLength, full: true), [("x-goog-hash", "16 bytes, a crc32c digest has 4")])
    }

    @Test func structuredDigestDetails() {
        let sha = "16j7swfXgJRpypq8sAguT41WUeRtPNt2LQLQvzfJ5ZI="
        // Duplicate keys: the last one wins (RFC 8941 §4.2.2); parameters are ignored.
        let duplicate = Self.head([("Repr-Digest", "sha-256=:AAAA:, sha-256=:\(sha):;x=1")])
        #expect(Self.trusted(duplicate, full: true) == ["Repr-Digest: sha256=\(Self.sha256)"])
        #expect(Self.ignored(duplicate, full: true).isEmpty)
        // Unpadded base64 is accepted, as RFC 8941 asks of parsers.
        let unpadded = Self.head([("Content-Digest", "sha-256=:\(sha.dropLast()):")])
        #expect(Self.trusted(unpadded, full: true) == ["Content-Digest: sha256=\(Self.sha256)"])
        // Keys are lowercase in structured fields.
        let uppercase = Self.head([("Repr-Digest", "SHA-256=:\(sha):")])
        Self.expectIgnored(
            Self.ignored(uppercase, full: true), [("Repr-Digest", "not a valid structured-field")])
        let innerList = Self.head([("Repr-Digest", "sha-256=(:\(sha):), crc32c=:ImIEBA==:")])
        #expect(Self.trusted(innerList, full: true) == ["Repr-Digest: crc32c=\(Self.crc32c)"])
        Self.expectIgnored(
            Self.ignored(innerList, full: true), [("Repr-Digest", "sha-256 is not a byte sequence")])
        let emptyBytes = Self.head([("Repr-Digest", "sha-256=::")])
        Self.expectIgnored(Self.ignored(emptyBytes, full: true), [("Repr-Digest", "decodes to 0 bytes")])
        let badBase64 = Self.head([("Repr-Digest", "sha-256=:16j7swfXgJRpypq8sAguT41WUeRtPNt2LQLQvzfJ5ZI==:")]
        )
        Self.expectIgnored(Self.ignored(badBase64, full: true), [("Repr-Digest", "not valid base64")])
    }

    @Test func probeHeaders() {
        #expect(ServerDigests.wantReprDigest == "sha-256=10, sha-512=3")
        #expect(ServerDigests.probeRequestHeaders.map(\.name) == ["Want-Repr-Digest", "Want-Digest"])
        #expect(StructuredFieldDictionary.parse([ServerDigests.wantReprDigest]) != nil)
        for header in ServerDigests.probeRequestHeaders {
            #expect(HTTPHeaders.isToken(header.name))
            #expect(HTTPHeaders.isValidFieldValue(header.value))
        }
    }

    // MARK: - Structured-field dictionaries

    @Test(arguments: [
        ("", [String]()),
        ("a=1", ["a"]),
        ("a=1, b=2", ["a", "b"]),
        ("a=1,b=2", ["a", "b"]),
        ("a=1 ,\tb=2", ["a", "b"]),
        ("  a=:AAAA:  ", ["a"]),
        ("a, b;x=?0, c=?1", ["a", "b", "c"]),
        ("a=\"str \\\" \\\\ ing\", b=tok/en:x, c=-1.25, d=@1700000000", ["a", "b", "c", "d"]),
        ("a=(1 2 \"x\");p, b=()", ["a", "b"]),
        ("*k.x_y-z=1", ["*k.x_y-z"]),
        ("a=1, a=2", ["a"]),
    ])
    func structuredFieldDictionaries(text: String, keys: [String]) {
        #expect(StructuredFieldDictionary.parse([text])?.map(\.key) == keys)
    }

    @Test(arguments: [
        "a=", "a=1,", ",a=1", "A=1", "1a=1", "a=1 b=2", "a=\"unterminated", "a=:AAAA", "a=:AA AA:", "a=(1",
        "a=(1,2)",
        "a=?2", "a=1234567890123456", "a=1.2345", "a=\"\\x\"", "a=1;", "a=1;B=2", "a=%\"x\"",
    ])
    func malformedStructuredFieldDictionaries(text: String) {
        #expect(StructuredFieldDictionary.parse([text]) == nil)
    }

    @Test func structuredFieldValues() throws {
        let members = try #require(
            StructuredFieldDictionary.parse(["sha-256=:AAAA:, x=(1), y=tok", "z=:Zg==:"]))
        #expect(
            members.map(\.value) == [.byteSequence("AAAA"), .innerList, .otherItem, .byteSequence("Zg==")])
    }
}

/// S3's multipart uploads and its checksum mode.
@Suite("Server digests: S3 multipart objects")
struct S3MultipartDigestTests {
    func head(_ fields: [(String, String)]) -> ResponseHead {
        ResponseHead(
            versionMajor: 1, versionMinor: 1, status: 200, reason: "OK", headers: HTTPHeaders(fields))
    }

    /// A multipart object's `x-amz-checksum-sha256` is of its parts' checksums even where S3 leaves out
    /// `x-amz-checksum-type` and the `-N` suffix (the ETag's `-N` gives it away): it is ignored, never
    /// compared with the file's SHA-256 (which discarded a correct 256 MiB file).
    @Test func aChecksumBesideAMultipartETagIsComposite() {
        let found = ServerDigests.expectations(
            from: head([
                ("ETag", "\"9b2cf535f27731c974343645a3985328-2\""),
                ("x-amz-checksum-sha256", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="),
            ]), isFullRepresentation: true)
        #expect(found.trusted.isEmpty)
        #expect(
            found.ignored.contains { $0.header == "x-amz-checksum-sha256" && $0.reason.contains("COMPOSITE") }
        )
        // FULL_OBJECT says it is of the whole object after all.
        let full = ServerDigests.expectations(
            from: head([
                ("ETag", "\"9b2cf535f27731c974343645a3985328-2\""), ("x-amz-checksum-type", "FULL_OBJECT"),
                ("x-amz-checksum-sha256", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="),
            ]), isFullRepresentation: true)
        #expect(full.trusted.count == 1)
    }

    /// The probe asks S3 for its checksums, except on a presigned URL, which must carry only the
    /// `x-amz-` fields it was signed with.
    @Test func checksumModeIsAskedForUnlessTheURLIsPresigned() {
        let plain = ServerDigests.probeRequestHeaders(for: URL(string: "https://bucket.s3.example/key")!)
        #expect(plain.contains { $0.name == "x-amz-checksum-mode" && $0.value == "ENABLED" })
        for presigned in [
            "https://b.s3.example/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AK&X-Amz-Signature=ab",
            "https://b.s3.example/k?AWSAccessKeyId=AK&Expires=1&Signature=ab",
            "https://storage.example/k?X-Goog-Signature=ab", "https://acct.blob.example/c/k?sv=1&sig=ab",
        ] {
            let headers = ServerDigests.probeRequestHeaders(for: URL(string: presigned)!)
            #expect(!headers.contains { $0.name == "x-amz-checksum-mode" }, "\(presigned)")
        }
    }
}
