import FoundationEssentials

/// Something a running download wants its user to know, delivered through ``Download/events``.
///
/// A run tells, in order: a ``Kind/probe`` event (what the server said about the file), a
/// ``Kind/plan`` (how it is split), then while bytes arrive ``Kind/progress`` about once a second
/// together with ``Kind/retry``, ``Kind/takeOver``, ``Kind/connections`` and the notes
/// ``Kind/resumed``, ``Kind/restarting`` and ``Kind/warning``; then ``Kind/verified`` once every
/// checksum matched, and last ``Kind/finished`` or ``Kind/failed``. `fastpull --json` prints exactly
/// these events, one JSON object a line.
///
/// Look at ``kind``, and read what the event carries from the property of that name (``progress``,
/// ``finished``, ``error``, …; nil on events of other kinds). New kinds may come in later versions
/// without breaking a caller: a `switch` over ``kind`` has a `default`.
///
/// ```swift
/// for await event in download.events {
///     switch event.kind {
///     case .progress: print(event.progress!.bytes)
///     case .warning: print("warning:", event.warning!)
///     default: break
///     }
/// }
/// ```
public struct Event: Sendable, Equatable {
    /// Everything the event says, for the code of this package (the command line's `--json`, its
    /// display), which matches every kind and the diagnostic detail (connection numbers).
    package enum Detail: Sendable, Equatable {
        case probe(Probe)
        case plan(Plan)
        case progress(Progress)
        case resumed(keptBytes: Int64, totalBytes: Int64)
        case restarting(reason: String)
        case warning(String)
        case retry(connection: Int, reason: String, delaySeconds: Double)
        case steal(from: Int, to: Int, offset: Int64, end: Int64, hedged: Bool)
        case connections(Int)
        case verified(Verification)
        case finished(Finished)
        case failed(FastpullError)
        case exchange(Exchange)
        case sourceDropped(url: URL, reason: String)
        case pieceFailed(offset: Int64, length: Int64, sources: [URL])
    }

    /// What the event says, in full.
    package let detail: Detail

    package init(_ detail: Detail) { self.detail = detail }

    /// What kind of event it is. Compare it with the kinds below; more may be added.
    public struct Kind: Sendable, Hashable, RawRepresentable, CustomStringConvertible {
        /// The kind's name, as `fastpull --json` writes it in `event`.
        public let rawValue: String
        /// The kind named `rawValue`.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The kind's name.
        public var description: String { rawValue }

        /// The probe found the file (``Event/probe``).
        public static let probe = Kind(rawValue: "probe")
        /// The file is split (``Event/plan``).
        public static let plan = Kind(rawValue: "plan")
        /// How far the download has come, about once a second (``Event/progress``).
        public static let progress = Kind(rawValue: "progress")
        /// A journal was found and the download continues from it (``Event/resumed``).
        public static let resumed = Kind(rawValue: "resumed")
        /// The download starts over from zero (``Event/restartReason``).
        public static let restarting = Kind(rawValue: "restarting")
        /// Something worth a warning that does not stop the download (``Event/warning``).
        public static let warning = Kind(rawValue: "warning")
        /// A connection failed and tries again after a wait (``Event/retry``).
        public static let retry = Kind(rawValue: "retry")
        /// A connection took over part of another's range (``Event/takeOver``).
        public static let takeOver = Kind(rawValue: "steal")
        /// The number of connections changed (``Event/connections``).
        public static let connections = Kind(rawValue: "connections")
        /// Every expected checksum matched (``Event/verified``).
        public static let verified = Kind(rawValue: "verified")
        /// The file is at its output path, verified: the last event of a successful run
        /// (``Event/finished``).
        public static let finished = Kind(rawValue: "finished")
        /// The run failed: the last event of a failed run (``Event/error``).
        public static let failed = Kind(rawValue: "failed")
        /// A request head and the head of its answer, with ``Configuration/Diagnostics/verbose``
        /// (``Event/exchange``).
        public static let exchange = Kind(rawValue: "exchange")
        /// A source of the file is no longer used (``Event/sourceDropped``).
        public static let sourceDropped = Kind(rawValue: "sourceDropped")
        /// Bytes failed their piece hash and are fetched again (``Event/pieceFailed``).
        public static let pieceFailed = Kind(rawValue: "pieceFailed")
    }

    /// What kind of event it is.
    public var kind: Kind {
        switch detail {
        case .probe: .probe
        case .plan: .plan
        case .progress: .progress
        case .resumed: .resumed
        case .restarting: .restarting
        case .warning: .warning
        case .retry: .retry
        case .steal: .takeOver
        case .connections: .connections
        case .verified: .verified
        case .finished: .finished
        case .failed: .failed
        case .exchange: .exchange
        case .sourceDropped: .sourceDropped
        case .pieceFailed: .pieceFailed
        }
    }

    /// What the probe found: the file's size, whether ranges work, its validators and the digests
    /// the server offers.
    public var probe: Probe? { if case .probe(let value) = detail { value } else { nil } }
    /// How the file is split into segments fetched over up to `connections` connections.
    public var plan: Plan? { if case .plan(let value) = detail { value } else { nil } }
    /// How far the download has come.
    public var progress: Progress? { if case .progress(let value) = detail { value } else { nil } }
    /// The bytes a journal kept, of the file's, when the download continues from it.
    public var resumed: (keptBytes: Int64, totalBytes: Int64)? {
        if case .resumed(let kept, let total) = detail { (kept, total) } else { nil }
    }
    /// Why the download starts over from zero.
    public var restartReason: String? {
        if case .restarting(let reason) = detail { reason } else { nil }
    }
    /// The warning.
    public var warning: String? { if case .warning(let text) = detail { text } else { nil } }
    /// Why a connection failed, and how long it waits before it tries again.
    public var retry: (reason: String, delaySeconds: Double)? {
        if case .retry(_, let reason, let delay) = detail { (reason, delay) } else { nil }
    }
    /// The range `[offset, end)` one connection took over from another; `hedged` when the owner was
    /// much slower and stops early.
    public var takeOver: (offset: Int64, end: Int64, hedged: Bool)? {
        if case .steal(_, _, let offset, let end, let hedged) = detail { (offset, end, hedged) } else { nil }
    }
    /// The number of connections, after it changed.
    public var connections: Int? { if case .connections(let count) = detail { count } else { nil } }
    /// The checksums that matched.
    public var verified: Verification? { if case .verified(let value) = detail { value } else { nil } }
    /// The verified file at its output path.
    public var finished: Finished? { if case .finished(let value) = detail { value } else { nil } }
    /// The error that ended the run.
    public var error: FastpullError? { if case .failed(let error) = detail { error } else { nil } }
    /// The request head sent and the response head that answered it.
    public var exchange: Exchange? { if case .exchange(let value) = detail { value } else { nil } }
    /// The source no longer used, and why.
    public var sourceDropped: (url: URL, reason: String)? {
        if case .sourceDropped(let url, let reason) = detail { (url, reason) } else { nil }
    }
    /// The bytes `[offset, offset + length)` that did not match their piece hash, and the servers
    /// they came from.
    public var pieceFailed: (offset: Int64, length: Int64, sources: [URL])? {
        if case .pieceFailed(let offset, let length, let sources) = detail {
            (offset, length, sources)
        } else {
            nil
        }
    }
}

// The events as the package makes them: `emit(.warning("…"))`.
extension Event {
    package static func probe(_ value: Probe) -> Event { Event(.probe(value)) }
    package static func plan(_ value: Plan) -> Event { Event(.plan(value)) }
    package static func progress(_ value: Progress) -> Event { Event(.progress(value)) }
    package static func resumed(keptBytes: Int64, totalBytes: Int64) -> Event {
        Event(.resumed(keptBytes: keptBytes, totalBytes: totalBytes))
    }
    package static func restarting(reason: String) -> Event { Event(.restarting(reason: reason)) }
    package static func warning(_ text: String) -> Event { Event(.warning(text)) }
    package static func retry(connection: Int, reason: String, delaySeconds: Double) -> Event {
        Event(.retry(connection: connection, reason: reason, delaySeconds: delaySeconds))
    }
    package static func steal(from: Int, to: Int, offset: Int64, end: Int64, hedged: Bool) -> Event {
        Event(.steal(from: from, to: to, offset: offset, end: end, hedged: hedged))
    }
    package static func connections(_ count: Int) -> Event { Event(.connections(count)) }
    package static func verified(_ value: Verification) -> Event { Event(.verified(value)) }
    package static func finished(_ value: Finished) -> Event { Event(.finished(value)) }
    package static func failed(_ error: FastpullError) -> Event { Event(.failed(error)) }
    package static func exchange(_ value: Exchange) -> Event { Event(.exchange(value)) }
    package static func sourceDropped(url: URL, reason: String) -> Event {
        Event(.sourceDropped(url: url, reason: reason))
    }
    package static func pieceFailed(offset: Int64, length: Int64, sources: [URL]) -> Event {
        Event(.pieceFailed(offset: offset, length: length, sources: sources))
    }
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
        /// computed: see ``Configuration/Integrity/computesSHA256``).
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
        /// For a file kept because it was there (``Report/keptAsFound``): not looked at.
        public var keptAsFound: Bool

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
            self.keptAsFound = report.keptAsFound
        }

        /// Average speed in bytes per second.
        public var bytesPerSecond: Double { seconds > 0 ? Double(size) / seconds : 0 }
    }
}
