/// An object an ``S3Client`` stored: what the server answered about it.
public struct S3Object: Sendable, Hashable {
    /// The bucket.
    public var bucket: String
    /// The object key.
    public var key: String
    /// The ETag the server gave (quotes included), e.g. `"9b2cf535f27731c974343645a3985328"`, or for a
    /// multipart upload `"<md5 of the part md5s>-<part count>"`.
    public var etag: String?
    /// The `x-amz-checksum-sha256` (base64) the server reported for the whole object, when it did; for a
    /// multipart upload with SHA256 checksums it is the composite checksum, a digest of the parts'
    /// digests, not of the object's bytes.
    public var checksumSHA256: String?
}
