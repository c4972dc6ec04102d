import Foundation

/// AWS Signature Version 4 for S3 requests: signed headers for the uploads the tests make, and query
/// presigning (`X-Amz-Signature` in the URL) for the downloads, as S3 users share objects.
public struct SigV4Signer: Sendable {
    /// The access key id.
    public var accessKey: String
    /// The secret access key.
    public var secretKey: String
    /// The region in the credential scope, e.g. "us-east-1".
    public var region: String
    /// The service in the credential scope: "s3".
    public var service = "s3"

    /// A signer for `accessKey`/`secretKey` in `region`.
    public init(accessKey: String, secretKey: String, region: String) {
        self.accessKey = accessKey
        self.secretKey = secretKey
        self.region = region
    }

    /// A presigned URL for `method` on `path` (already URI-encoded, e.g. `/bucket/key`) at `host`
    /// (`127.0.0.1:port`), valid for `expires` seconds from `date`. Only `host` is signed and the payload
    /// is `UNSIGNED-PAYLOAD`, as for S3's presigned GETs.
    public func presignedURL(
        method: String = "GET", scheme: String = "http", host: String, path: String,
        expires: Int = 3600, date: Date = Date()
    ) -> String {
        let (day, time) = Self.timestamps(date)
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let query = [
            ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
            ("X-Amz-Credential", "\(accessKey)/\(scope)"),
            ("X-Amz-Date", time),
            ("X-Amz-Expires", String(expires)),
            ("X-Amz-SignedHeaders", "host"),
        ]
        let canonicalQuery = Self.canonicalQuery(query)
        let canonicalRequest = [
            method, path, canonicalQuery, "host:\(host)\n", "host", "UNSIGNED-PAYLOAD",
        ].joined(separator: "\n")
        let signature = sign(canonicalRequest, day: day, time: time, scope: scope)
        return "\(scheme)://\(host)\(path)?\(canonicalQuery)&X-Amz-Signature=\(signature)"
    }

    /// The headers that sign a request: `x-amz-date`, `x-amz-content-sha256` and `Authorization`.
    /// `query` is the raw query items (the signer encodes them); `headers` are further headers to sign
    /// (names in any case).
    public func signedHeaders(
        method: String, host: String, path: String, query: [(String, String)] = [],
        headers: [String: String] = [:], payload: Data, date: Date = Date()
    ) -> [(String, String)] {
        let (day, time) = Self.timestamps(date)
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let payloadHash = SHA256Digest.hex(SHA256Digest.of(payload))
        var signed: [String: String] = [
            "host": host, "x-amz-date": time, "x-amz-content-sha256": payloadHash,
        ]
        for (name, value) in headers { signed[name.lowercased()] = value }
        let names = signed.keys.sorted()
        let canonicalHeaders = names.map { "\($0):\(signed[$0]!.trimmingCharacters(in: .whitespaces))\n" }
            .joined()
        let signedNames = names.joined(separator: ";")
        let canonicalRequest = [
            method, path, Self.canonicalQuery(query), canonicalHeaders, signedNames, payloadHash,
        ].joined(separator: "\n")
        let signature = sign(canonicalRequest, day: day, time: time, scope: scope)
        let authorization =
            "AWS4-HMAC-SHA256 Credential=\(accessKey)/\(scope), SignedHeaders=\(signedNames), Signature=\(signature)"
        return [
            ("x-amz-date", time), ("x-amz-content-sha256", payloadHash), ("Authorization", authorization),
        ]
            + headers.map { ($0.key, $0.value) }
    }

    /// Percent-encodes everything but RFC 3986's unreserved characters (and `/` when `keepSlash`), as
    /// SigV4 requires for paths and query items.
    public static func uriEncode(_ text: String, keepSlash: Bool = false) -> String {
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
        var encoded = ""
        for byte in text.utf8 {
            if unreserved.contains(byte) || (keepSlash && byte == UInt8(ascii: "/")) {
                encoded.append(Character(UnicodeScalar(byte)))
            } else {
                encoded += String(format: "%%%02X", byte)
            }
        }
        return encoded
    }

    private func sign(_ canonicalRequest: String, day: String, time: String, scope: String) -> String {
        let stringToSign = [
            "AWS4-HMAC-SHA256", time, scope, SHA256Digest.hex(SHA256Digest.of(Data(canonicalRequest.utf8))),
        ].joined(separator: "\n")
        var key = SHA256Digest.hmac(key: Array("AWS4\(secretKey)".utf8), Data(day.utf8))
        for part in [region, service, "aws4_request"] { key = SHA256Digest.hmac(key: key, Data(part.utf8)) }
        return SHA256Digest.hex(SHA256Digest.hmac(key: key, Data(stringToSign.utf8)))
    }

    private static func canonicalQuery(_ items: [(String, String)]) -> String {
        let encoded: [(name: String, value: String)] = items.map { (uriEncode($0.0), uriEncode($0.1)) }
        let sorted = encoded.sorted { left, right in
            left.name == right.name ? left.value < right.value : left.name < right.name
        }
        return sorted.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
    }

    /// `20261201` and `20261201T072200Z` for `date` in UTC.
    private static func timestamps(_ date: Date) -> (day: String, time: String) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let day = String(format: "%04d%02d%02d", parts.year!, parts.month!, parts.day!)
        return (day, day + String(format: "T%02d%02d%02dZ", parts.hour!, parts.minute!, parts.second!))
    }
}
