import FoundationEssentials

/// Something a running download wants its user to know, delivered through ``Download/events``.
///
/// A run tells, in order: ``probe(_:)`` (what the server said about the file), ``plan(_:)`` (how it
/// is split), then while bytes arrive ``progress(_:)`` about once a second together with ``retry(connection:reason:delaySeconds:)``,
/// ``steal(from:to:offset:end:hedged:)``, ``connections(_:)`` and the notes ``resumed(keptBytes:totalBytes:)``,
/// ``restarting(reason:)`` and ``warning(_:)``; then ``verified(_:)`` once every checksum matched, and
/// last ``finished(_:)`` or ``failed(_:)``. `fastpull --json` prints exactly these events, one JSON
/// object a line.
public enum Event: Sendable, Equatable {
    /// The probe found the file: its size, whether ranges work, its validators and the digests the
    /// server offers.
    case probe(Probe)
    /// The file is split into segments fetched over up to `connections` connections.
    case plan(Plan)
    /// How far the download has come; sent about once a second while it runs.
    case progress(Progress)
    /// A journal was found and the download continues from it, keeping `keptBytes` of `totalBytes`.
    case resumed(keptBytes: Int64, totalBytes: Int64)
    /// The download starts over from zero, for the reason given.
    case restarting(reason: String)
    /// Something worth a warning that does not stop the download.
    case warning(String)
    /// A connection failed and retries after `delaySeconds`.
    case retry(connection: Int, reason: String, delaySeconds: Double)
    /// An idle connection took over `[offset, end)` from a busier one (`hedged` when the owner was
    /// much slower and stops early).
    case steal(from: Int, to: Int, offset: Int64, end: Int64, hedged: Bool)
    /// The number of connections changed (adaptive ramp-up, a refusal, or a stall).
    case connections(Int)
    /// Every expected checksum matched (there may be none); the file is about to be moved into place.
    case verified(Verification)
    /// The file is at its output path, verified. The last event of a successful run.
    case finished(Finished)
    /// The run failed with this error. The last event of a failed run.
    case failed(FastpullError)
    /// A request head and the response head that answered it (only with ``Configuration/verbose``).
    case exchange(Exchange)
    /// A source of the file (``Configuration/mirrors``) is no longer used, for the reason given; the
    /// others go on.
    case sourceDropped(url: URL, reason: String)
    /// Bytes `[offset, offset + length)` did not match their piece hash (``Configuration/pieceHashes``)
    /// and are fetched again; `sources` are the servers they came from.
    case pieceFailed(offset: Int64, length: Int64, sources: [URL])
}

extension Event {
    /// One request and the head of its answer, a line per field, secrets redacted.
    public struct Exchange: Sendable, Equatable {
        /// `GET /path HTTP/1.1`, then `Name: value` for each field.
        public var request: [String]
        /// `HTTP/1.1 206 Partial Content`, then `Name: value` for each field.
        public var response: [String]
    }
}

extension Event {
    /// What the probe learned about the remote file.
    public struct Probe: Sendable, Equatable {
        /// The URL asked for.
        public var url: URL
        /// The URL after redirects, where the bytes come from.
        public var finalURL: URL
        /// The size in bytes, when the server told it.
        public var size: Int64?
        /// Whether the server answers byte-range requests, so the file can be fetched in parallel.
        public var acceptsRanges: Bool
        /// The strong entity tag, if the server sent one.
        public var etag: String?
        /// `Last-Modified`, if the server sent it.
        public var lastModified: String?
        /// The `Content-Disposition` header, if the server sent one (the command line takes the file's
        /// name from it).
        public var contentDisposition: String?
        /// Digests of the whole file the server offered and that will verify it, each with the header
        /// it came from.
        public var offeredDigests: [OfferedDigest]
        /// Digest headers the server sent that cannot verify the file (weak, composite, encoded), with
        /// the reason each was ignored.
        public var ignoredDigests: [IgnoredDigest]

        /// Creates a probe result.
        public init(
            url: URL, finalURL: URL, size: Int64?, acceptsRanges: Bool, etag: String? = nil,
            lastModified: String? = nil, contentDisposition: String? = nil,
            offeredDigests: [OfferedDigest] = [], ignoredDigests: [IgnoredDigest] = []
        ) {
            self.url = url
            self.finalURL = finalURL
            self.size = size
            self.acceptsRanges = acceptsRanges
            self.etag = etag
            self.lastModified = lastModified
            self.contentDisposition = contentDisposition
            self.offeredDigests = offeredDigests
            self.ignoredDigests = ignoredDigests
        }

        init(_ remote: RemoteFile) {
            var offered: [OfferedDigest] = []
            for expectation in remote.serverDigests {
                if case .header(let name) = expectation.source {
                    offered.append(OfferedDigest(checksum: expectation.checksum, header: name))
                }
            }
            self.init(
                url: remote.url, finalURL: remote.finalURL, size: remote.size,
                acceptsRanges: remote.acceptsRanges, etag: remote.etag, lastModified: remote.lastModified,
                contentDisposition: remote.contentDisposition, offeredDigests: offered,
                ignoredDigests: remote.ignoredServerDigests.map {
                    IgnoredDigest(header: $0.header, reason: $0.reason)
                })
        }
    }

    /// A digest of the whole file that the server offered in a response header.
    public struct OfferedDigest: Sendable, Hashable {
        /// The digest.
        public var checksum: Checksum
        /// The header it came from (`Repr-Digest`, `x-goog-hash`, `ETag`, …).
        public var header: String

        /// Creates an offered digest.
        public init(checksum: Checksum, header: String) {
            self.checksum = checksum
            self.header = header
        }
    }

    /// A digest header that was not used, and why.
    public struct IgnoredDigest: Sendable, Hashable {
        /// The header's name.
        public var header: String
        /// Why it cannot verify the file.
        public var reason: String

        /// Creates an ignored digest.
        public init(header: String, reason: String) {
            self.header = header
            self.reason = reason
        }
    }

    /// How the file is split and fetched.
    public struct Plan: Sendable, Equatable {
        /// What the probe learned.
        public var probe: Probe
        /// The byte ranges `[start, end)` fetched in parallel, in file order; one range covering the
        /// file when the server has no ranges, none when the size is unknown.
        public var segments: [Range<Int64>]
        /// The most connections that fetch at once.
        public var connections: Int
        /// Bytes already in place from an interrupted earlier run.
        public var resumedBytes: Int64

        /// Creates a plan.
        public init(probe: Probe, segments: [Range<Int64>], connections: Int, resumedBytes: Int64 = 0) {
            self.probe = probe
            self.segments = segments
            self.connections = connections
            self.resumedBytes = resumedBytes
        }
    }

    /// A moment of a running download, as the ``progress(_:)`` event carries it.
    public struct Progress: Sendable, Equatable {
        /// Bytes in the output file so far.
        public var bytes: Int64
        /// The file's size, once known.
        public var totalBytes: Int64?
        /// Bytes per second over the last few seconds.
        public var bytesPerSecond: Double
        /// Connections transferring right now.
        public var connections: Int

        /// Creates a progress sample.
        public init(bytes: Int64, totalBytes: Int64?, bytesPerSecond: Double, connections: Int) {
            self.bytes = bytes
            self.totalBytes = totalBytes
            self.bytesPerSecond = bytesPerSecond
            self.connections = connections
        }

        /// The fraction done, 0...1, when the size is known.
        public var fraction: Double? {
            guard let totalBytes else { return nil }
            return totalBytes == 0 ? 1 : min(1, Double(bytes) / Double(totalBytes))
        }

        /// Seconds left at the current speed, when the size and the speed are known.
        public var secondsLeft: Double? {
            guard let totalBytes, bytesPerSecond > 0 else { return nil }
            return Double(max(totalBytes - bytes, 0)) / bytesPerSecond
        }
    }

    /// What verification found: every digest computed and every expectation with its verdict.
    public struct Verification: Sendable, Equatable {
        /// Every digest computed over the file, by algorithm name, in lowercase hexadecimal.
        public var digests: [String: String]
        /// Every expected checksum with its source and verdict.
        public var checks: [Report.ChecksumCheck]

        /// Creates a verification result.
        public init(digests: [String: String], checks: [Report.ChecksumCheck]) {
            self.digests = digests
            self.checks = checks
        }
    }

    /// What a finished download did, as the ``finished(_:)`` event carries it.
    public struct Finished: Sendable, Equatable {
        /// Where the verified file is.
        public var outputPath: String
        /// Its size in bytes.
        public var size: Int64
        /// Wall-clock seconds the run took.
        public var seconds: Double
        /// Body bytes received in this run, including bytes fetched again after failures; 0 when the
        /// file was already in place.
        public var bytesFetched: Int64
        /// Every digest computed, by algorithm name, in lowercase hexadecimal (`sha256` where it was
        /// computed: see ``Configuration/computesSHA256``).
        public var digests: [String: String]
        /// The expected checksums the file matched.
        public var verifiedChecksums: [Checksum]
        /// The most connections that fetched at once.
        public var connections: Int
        /// Retries after failures.
        public var retries: Int
        /// Bytes kept from an interrupted earlier run.
        public var resumedBytes: Int64
        /// True when an existing file already matched its checksums and nothing was downloaded.
        public var alreadyPresent: Bool
        /// What each source served, when there were several.
        public var sources: [Report.SourceUse]
        /// For a file kept from an earlier run: the digests recorded on it when it was saved
        /// (``Report/recordedSHA256``), by algorithm name, as recorded and not computed in this run;
        /// empty otherwise. ``digests`` holds only what was computed.
        public var recordedDigests: [String: String]

        /// The event of a finished ``Report``.
        public init(_ report: Report, alreadyPresent: Bool = false) {
            var digests = report.digests
            if !report.sha256.isEmpty { digests["sha256"] = report.sha256 }
            self.outputPath = report.outputPath
            self.size = report.size
            self.seconds = report.seconds
            self.bytesFetched = report.bytesFetched
            self.digests = digests
            self.verifiedChecksums = report.verifiedChecksums
            self.connections = report.connections
            self.retries = report.retries
            self.resumedBytes = report.resumedBytes
            self.alreadyPresent = alreadyPresent
            self.sources = report.sources
            self.recordedDigests = report.recordedSHA256.isEmpty ? [:] : ["sha256": report.recordedSHA256]
        }

        /// Average speed in bytes per second.
        public var bytesPerSecond: Double { seconds > 0 ? Double(size) / seconds : 0 }
    }
}
