import Foundation

/// What a finished download did: where the file is, how big, how fast, and its verified digest.
public struct Report: Sendable {
    /// The URL the download was asked for.
    public var url: URL
    /// The URL the bytes came from, after redirects.
    public var finalURL: URL
    /// Where the verified file now is.
    public var outputPath: String
    /// The file's size in bytes.
    public var size: Int64
    /// Wall-clock seconds from the probe to the rename.
    public var seconds: Double
    /// Body bytes received from the server in this run, including bytes fetched again after failures.
    public var bytesFetched: Int64
    /// The SHA-256 of the file, as lowercase hexadecimal.
    public var sha256: String
    /// The checksums that were given and matched.
    public var verifiedChecksums: [Checksum]
    /// How many connections fetched data in parallel.
    public var connections: Int
    /// How many segments the file was split into.
    public var segments: Int
    /// How many times a request was retried after a failure.
    public var retries: Int
    /// Bytes kept from an interrupted earlier run (0 for a fresh download).
    public var resumedBytes: Int64
    /// Whether the server honoured byte ranges (false means one streaming connection was used).
    public var rangesSupported: Bool

    /// Average speed in bytes per second.
    public var bytesPerSecond: Double { seconds > 0 ? Double(size) / seconds : 0 }
}
