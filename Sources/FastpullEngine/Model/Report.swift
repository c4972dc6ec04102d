import FoundationEssentials

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
    /// The SHA-256 of the file, as lowercase hexadecimal, computed in this run; empty when it was not
    /// (``Configuration/Integrity/computesSHA256`` false, and no SHA-256 checksum to verify). A file kept from
    /// an earlier run is hashed as it is now when asked; what was recorded is ``recordedSHA256``.
    public var sha256: String
    /// Every expected checksum the file matched, whatever its source (given, from a checksum file, or
    /// offered by the server), without repeats. ``checks`` says where each came from.
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
    /// Every digest computed over the file, by algorithm name (`sha256`, `sha512`, `sha1`, `md5`,
    /// `crc32c`) → lowercase hexadecimal: SHA-256 where it was computed (``Configuration/Integrity/computesSHA256``,
    /// or a SHA-256 to verify), the others when an expected checksum needed them.
    public var digests: [String: String]
    /// Every expected checksum the download considered, in order: the given ones, those from checksum
    /// files, then the server's, including the server fields that were ignored and why.
    public var checks: [ChecksumCheck]
    /// Seconds from the probe to the moment the file's last byte was written.
    public var transferSeconds: Double
    /// Seconds from the moment the last byte was written until every checksum was verified: what
    /// verification cost beyond the transfer (the prefix was hashed while the download ran).
    public var hashTailSeconds: Double
    /// The servers the bytes came from, the URL asked for first, when there were several
    /// (``Configuration/Sources/mirrors``); empty for one.
    public var sources: [SourceUse] = []
    /// For a file kept from an earlier run (the server still offers the version saved, so nothing
    /// was downloaded): the SHA-256 recorded on it when it was saved, as recorded, not computed in
    /// this run; empty otherwise, or when none was recorded.
    public var recordedSHA256: String = ""
    /// For a file kept because it was there (``BatchOptions/ExistingFiles/skip``): it was not looked
    /// at, neither hashed nor compared with the server's.
    public var keptAsFound = false

    /// A report of every field (the engine's and a batch's rerun check make them).
    package init(
        url: URL, finalURL: URL, outputPath: String, size: Int64, seconds: Double, bytesFetched: Int64,
        sha256: String, verifiedChecksums: [Checksum], connections: Int, segments: Int, retries: Int,
        resumedBytes: Int64, rangesSupported: Bool, digests: [String: String], checks: [ChecksumCheck],
        transferSeconds: Double, hashTailSeconds: Double, sources: [SourceUse] = []
    ) {
        self.url = url
        self.finalURL = finalURL
        self.outputPath = outputPath
        self.size = size
        self.seconds = seconds
        self.bytesFetched = bytesFetched
        self.sha256 = sha256
        self.verifiedChecksums = verifiedChecksums
        self.connections = connections
        self.segments = segments
        self.retries = retries
        self.resumedBytes = resumedBytes
        self.rangesSupported = rangesSupported
        self.digests = digests
        self.checks = checks
        self.transferSeconds = transferSeconds
        self.hashTailSeconds = hashTailSeconds
        self.sources = sources
    }

    /// This run's average speed in bytes per second: the bytes it fetched (a resume's kept bytes do
    /// not count) over ``seconds``.
    public var bytesPerSecond: Double { seconds > 0 ? Double(max(size - resumedBytes, 0)) / seconds : 0 }
}

extension Report {
    /// What one source of the file served.
    public struct SourceUse: Sendable, Hashable {
        /// The source's URL, as given.
        public var url: URL
        /// Bytes it delivered into the file in this run.
        public var bytes: Int64
        /// Why it stopped being used, if it did.
        public var dropped: String?

        /// Creates a source's account.
        public init(url: URL, bytes: Int64, dropped: String? = nil) {
            self.url = url
            self.bytes = bytes
            self.dropped = dropped
        }
    }
}

extension Report {
    /// One expected checksum the download was checked against, where it came from, and the outcome.
    public struct ChecksumCheck: Sendable, Hashable, CustomStringConvertible {
        /// Where an expected checksum came from.
        public enum Source: Sendable, Hashable, CustomStringConvertible {
            /// ``Configuration/Integrity/checksums`` (the `--checksum` option).
            case user
            /// A checksum file, by the path or URL it was read from.
            case checksumFile(String)
            /// A response header of the server, by name (`Repr-Digest`, `x-goog-hash`, `X-Linked-Etag`).
            case header(String)
            /// A document that describes the file (``Configuration/Integrity/describedChecksums``), by name.
            case document(String)

            /// `the given checksum`, `checksum file SHA256SUMS` or `Repr-Digest header`.
            public var description: String {
                switch self {
                case .user: return "the given checksum"
                case .checksumFile(let name): return "checksum file \(name)"
                case .header(let name): return "\(name) header"
                case .document(let name): return name
                }
            }
        }

        /// How the file fared against the expectation.
        public enum Verdict: Sendable, Hashable {
            /// The file's digest is the expected one.
            case matched
            /// A server field that cannot be trusted to describe the file (weak, composite, encoded or
            /// malformed), for the reason given; it was not compared and fails nothing.
            case ignored(reason: String)
        }

        /// The expected digest; nil for an ignored server field.
        public var expected: Checksum?
        /// Where the expectation came from.
        public var source: Source
        /// The outcome.
        public var verdict: Verdict

        /// Creates a check.
        public init(expected: Checksum?, source: Source, verdict: Verdict) {
            self.expected = expected
            self.source = source
            self.verdict = verdict
        }

        /// `sha256=9f86… from the given checksum: matched`, or `x-amz-checksum-sha256 header: ignored (…)`.
        public var description: String {
            switch verdict {
            case .matched:
                return "\(expected.map { "\($0)" } ?? "checksum") from \(source): matched"
            case .ignored(let reason):
                return "\(source): ignored (\(reason))"
            }
        }
    }
}
