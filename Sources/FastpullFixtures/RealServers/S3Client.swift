import Foundation

/// Just enough of the S3 API, SigV4-signed, to put what the tests download into an S3 server on 127.0.0.1
/// (moto's): create a bucket, put an object, upload one in parts with SHA256 checksums, read an object's
/// headers, and make a presigned GET URL for it. Paths are path-style: `/bucket/key`.
public struct S3Client: Sendable {
    /// The server's port on 127.0.0.1.
    public var port: Int
    /// The signer for every request and presigned URL.
    public var signer: SigV4Signer

    /// A client for the S3 server on 127.0.0.1:`port`.
    public init(port: Int, signer: SigV4Signer) {
        self.port = port
        self.signer = signer
    }

    private var host: String { "127.0.0.1:\(port)" }
    private var http: LoopbackHTTPClient { LoopbackHTTPClient(port: port) }

    /// Creates `bucket`; a `publicRead` one lets anyone read its objects without a signature (the
    /// canned ACL `public-read`, as a public release bucket has).
    public func createBucket(_ bucket: String, publicRead: Bool = false) async throws {
        let headers = publicRead ? ["x-amz-acl": "public-read"] : [:]
        _ = try await request("PUT", path: "/\(bucket)", headers: headers, expecting: 200)
    }

    /// Stores `data` as `bucket`/`key` with a single PUT (replacing any object there); with
    /// `checksum`, S3 is given the SHA-256 to keep (`x-amz-checksum-sha256`), as an SDK uploading with
    /// checksums does.
    @discardableResult
    public func putObject(
        bucket: String, key: String, data: Data, checksum: Bool = false, publicRead: Bool = false
    ) async throws -> S3Object {
        // Without a content type, moto's web framework reads the body as a form and stores nothing.
        var headers = [
            "Content-Type": "application/octet-stream", "x-amz-acl": publicRead ? "public-read" : "private",
        ]
        if checksum {
            headers["x-amz-checksum-sha256"] = Data(SHA256Digest.of(data)).base64EncodedString()
            headers["x-amz-sdk-checksum-algorithm"] = "SHA256"
        }
        let response = try await request(
            "PUT", path: objectPath(bucket, key), headers: headers, body: data, expecting: 200)
        return S3Object(
            bucket: bucket, key: key, etag: response.header("ETag"),
            checksumSHA256: response.header("x-amz-checksum-sha256"))
    }

    /// Stores the concatenated `parts` as `bucket`/`key` with a multipart upload
    /// (CreateMultipartUpload, UploadPart for each part, CompleteMultipartUpload), asking for SHA256
    /// checksums (`x-amz-checksum-algorithm: SHA256`), so S3 keeps a composite checksum of the parts.
    /// Every part but the last must be at least 5 MiB.
    @discardableResult
    public func putMultipartObject(bucket: String, key: String, parts: [Data], publicRead: Bool = false)
        async throws -> S3Object
    {
        let path = objectPath(bucket, key)
        let created = try await request(
            "POST", path: path, query: [("uploads", "")],
            headers: [
                "x-amz-checksum-algorithm": "SHA256", "Content-Type": "application/octet-stream",
                "x-amz-acl": publicRead ? "public-read" : "private",
            ],
            expecting: 200)
        guard let uploadID = Self.element("UploadId", in: created.text) else {
            throw RealServerError(
                "CreateMultipartUpload for \(path) gave no UploadId", serverOutput: created.text)
        }
        var completion = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for (index, part) in parts.enumerated() {
            let number = index + 1
            let checksum = Data(SHA256Digest.of(part)).base64EncodedString()
            let uploaded = try await request(
                "PUT", path: path, query: [("partNumber", String(number)), ("uploadId", uploadID)],
                headers: [
                    "x-amz-checksum-sha256": checksum, "x-amz-sdk-checksum-algorithm": "SHA256",
                    "Content-Type": "application/octet-stream",
                ],
                body: part, expecting: 200)
            guard let etag = uploaded.header("ETag") else {
                throw RealServerError("UploadPart \(number) of \(path) gave no ETag")
            }
            completion +=
                "<Part><ETag>\(etag)</ETag><ChecksumSHA256>\(checksum)</ChecksumSHA256>"
                + "<PartNumber>\(number)</PartNumber></Part>"
        }
        completion += "</CompleteMultipartUpload>"
        let completed = try await request(
            "POST", path: path, query: [("uploadId", uploadID)],
            headers: ["Content-Type": "application/xml"], body: Data(completion.utf8), expecting: 200)
        if completed.text.contains("<Error>") {
            throw RealServerError("CompleteMultipartUpload for \(path) failed", serverOutput: completed.text)
        }
        let head = try await headObject(bucket: bucket, key: key, checksumMode: true)
        return S3Object(
            bucket: bucket, key: key, etag: head["etag"] ?? Self.element("ETag", in: completed.text),
            checksumSHA256: head["x-amz-checksum-sha256"]
                ?? Self.element("ChecksumSHA256", in: completed.text))
    }

    /// The response headers of a signed HEAD of `bucket`/`key` (lowercase names); with `checksumMode`,
    /// asks for the object's checksums (`x-amz-checksum-mode: ENABLED`).
    public func headObject(bucket: String, key: String, checksumMode: Bool = false) async throws -> [String:
        String]
    {
        let response = try await request(
            "HEAD", path: objectPath(bucket, key),
            headers: checksumMode ? ["x-amz-checksum-mode": "ENABLED"] : [:], expecting: 200)
        var headers: [String: String] = [:]
        for (name, value) in response.headers { headers[name.lowercased()] = value }
        return headers
    }

    /// A presigned GET URL for `bucket`/`key`, valid for `expires` seconds: what `aws s3 presign` or an
    /// SDK's `presignedURL` gives S3 users.
    public func presignedGetURL(bucket: String, key: String, expires: Int = 3600) -> String {
        signer.presignedURL(method: "GET", host: host, path: objectPath(bucket, key), expires: expires)
    }

    private func objectPath(_ bucket: String, _ key: String) -> String {
        "/\(bucket)/" + SigV4Signer.uriEncode(key, keepSlash: true)
    }

    private func request(
        _ method: String, path: String, query: [(String, String)] = [], headers: [String: String] = [:],
        body: Data = Data(), expecting status: Int
    ) async throws -> LoopbackHTTPClient.Response {
        let signed = signer.signedHeaders(
            method: method, host: host, path: path, query: query, headers: headers, payload: body)
        let queryText = query.map { item in
            item.1.isEmpty
                ? SigV4Signer.uriEncode(item.0)
                : "\(SigV4Signer.uriEncode(item.0))=\(SigV4Signer.uriEncode(item.1))"
        }.joined(separator: "&")
        let target = queryText.isEmpty ? path : path + "?" + queryText
        let response = try await http.send(.init(method: method, target: target, headers: signed, body: body))
        guard response.status == status else {
            throw RealServerError(
                "S3 \(method) \(target) answered \(response.status), not \(status)",
                serverOutput: response.text)
        }
        return response
    }

    /// The text of the first `<name>` element in `xml`.
    private static func element(_ name: String, in xml: String) -> String? {
        guard let open = xml.range(of: "<\(name)>"),
            let close = xml.range(of: "</\(name)>", range: open.upperBound..<xml.endIndex)
        else { return nil }
        return String(xml[open.upperBound..<close.lowerBound]).replacingOccurrences(of: "&quot;", with: "\"")
    }
}
