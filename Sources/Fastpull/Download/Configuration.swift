import FastpullHTTP
import FoundationEssentials

/// How a download runs. Every property has a default, so `Configuration()` is a good start.
public struct Configuration: Sendable {
    /// How many connections fetch in parallel: `.automatic` (the default) or a fixed count.
    public var connections: ConnectionCount
    /// The most connections `.automatic` opens (1...128, default ``Defaults/maximumConnections``).
    public var maximumConnections: Int
    /// A connection that receives nothing for this long gives its range back and is replaced.
    public var stallTimeout: Duration
    /// The lowest speed the download must keep up (default ``LowestSpeed/standard``, 1 KiB/s over a
    /// minute; nil for none). Below a ``maximumBytesPerSecond`` of its own, the floor is a quarter of
    /// that rate.
    public var lowestSpeed: LowestSpeed?
    /// Report every request head sent and the response head that answered it as an
    /// ``Event/Kind/exchange`` event (credentials and signatures redacted): what `--verbose` prints.
    public var verbose = false
    /// Connections to one host (a name and a port), shared by every download in the process (default
    /// ``Defaults/maximumConnectionsPerHost``).
    public var maximumConnectionsPerHost: Int
    /// Where to write the per-connection timeline (newline-delimited JSON), if anywhere.
    public var traceFile: String?
    /// Extra header fields for every request. `Authorization`, `Cookie` and `Proxy-Authorization`
    /// go only to the origin (scheme, host, port) of the URL asked for, never to another origin after
    /// a redirect, and are never written to the journal, a trace or a message.
    ///
    /// A field replaces Fastpull's own field of the same name (`Accept`, `User-Agent`, …); one with an
    /// empty value only removes Fastpull's. `Host`, `Range`, `If-Range`, `Content-Length`,
    /// `Transfer-Encoding` and `Connection` frame each request and cannot be set: the download fails
    /// with ``FastpullError/Code/usage`` naming the field, as it does for a malformed name or a value
    /// holding a line break. Through a `CONNECT` tunnel, `Proxy-Authorization` goes to the proxy (in
    /// the `CONNECT`) unless the proxy URL has credentials of its own, never inside the tunnel.
    public var headers: [Header] = []
    /// HTTP Basic credentials for the origin of the URL asked for; never sent to another origin. (User
    /// information inside the URL itself is not used: put it here.) A user name cannot contain `:`.
    public var credentials: Credentials? = nil
    /// The HTTP proxy to use (default: none; the command line uses the environment). `.environment`
    /// is read when the download starts.
    public var proxy: ProxySetting = .none
    /// A limit on the total download rate in bytes per second, across all connections of the
    /// download (at least 1).
    public var maximumBytesPerSecond: Int64? = nil
    /// Replaces `fastpull/<version>` in `User-Agent`; an empty string sends no `User-Agent`. A
    /// `User-Agent` in ``headers`` wins over both.
    public var userAgent: String? = nil
    /// No segment is planned smaller than this many bytes (except the file's last one).
    public var minimumSegmentSize: Int64
    /// When a connection sends its next request before its current answer ends (``Pipelining``).
    public var pipelining: Pipelining = .automatic
    /// Digests the file must match before it is moved into place.
    public var checksums: [Checksum]
    /// Checksum files whose entry for this download the file must match as well.
    public var checksumFiles: [ChecksumFileContents] = []
    /// Whether the verified file replaces a file that is at the destination when it is ready (true,
    /// the default, and `--force`). False leaves whatever is there alone, also a file that appeared
    /// during the download: the download then fails with ``FastpullError/Code/localIO`` and keeps the
    /// verified bytes in `<output>.part`, where a later run that may replace finds them complete. A
    /// device, FIFO or folder at the destination is never replaced.
    public var replacesExistingFile = true
    /// After a size or checksum mismatch, keep the bytes in `<output>.part` for inspection instead of
    /// deleting them (`--keep-partial`). The journal is deleted either way, so a later run starts over
    /// rather than resume into bytes known to be bad.
    public var keepPartialOnMismatch = false
    /// Computes the file's SHA-256 as it downloads and reports it (``Report/sha256``), even when no
    /// checksum asks for it (default true). SHA-256 costs about 0.7 CPU-seconds per GiB, as much as
    /// TLS itself: where the CPU is the limit (a fast link, a small machine) it is time. False leaves
    /// ``Report/sha256`` empty unless a checksum to verify is a SHA-256; every expected checksum is
    /// checked either way. The command line sets it only with `--sha256`.
    public var computesSHA256 = true

    /// What a download's hash computes: SHA-256 where it is reported (``computesSHA256``), then
    /// `needed` (the expected checksums' algorithms). Repeats are dropped by whatever hashes them
    /// (``DigestSet``).
    func digestAlgorithms(needing needed: [Digest.Algorithm]) -> [Digest.Algorithm] {
        (computesSHA256 ? [.sha256] : []) + needed
    }
    /// A PEM file of extra certificate authorities to trust, besides the system store.
    public var caFile: String?
    /// Skips TLS certificate and hostname verification. Unsafe; for testing only.
    public var insecure: Bool
    /// How many times one segment is retried after a failure that made no progress.
    public var retries: Int
    /// How long to wait for a TCP connection (and TLS handshake) before giving up.
    public var connectTimeout: Duration
    /// How long a connection may go without receiving a byte before it is abandoned and retried.
    public var idleTimeout: Duration
    /// How many redirects the probe follows before failing.
    public var maximumRedirects: Int
    /// Follows a redirect from `https` to plain `http`. False (the default) refuses such a downgrade
    /// with ``FastpullError/Code/httpStatus``: it would expose the download to anyone on the path.
    /// Even when allowed, `Authorization`, `Cookie`, `Proxy-Authorization` and the credentials are not
    /// sent after it (the scheme is part of the origin).
    public var allowInsecureRedirects = false
    /// Continues from the journal an interrupted download left, when it matches the remote file.
    /// False (`--restart`) discards any journal and starts from zero.
    public var resumeFromJournal: Bool
    /// When the remote file changed since the journal was written (or during the download), start
    /// over from zero (true) or fail with ``FastpullError/Code/remoteChanged`` (false, `--no-restart`).
    public var restartWhenRemoteChanges: Bool
    /// The first retry waits this long; each later one twice as long (with jitter), up to 8 seconds.
    public var retryBaseDelay: Duration
    /// Other URLs of the same file (mirrors, `--mirror`): segments go to whichever source delivers
    /// best, and a source that fails, stalls or sends bytes that do not verify is dropped while the
    /// others finish. Each must serve the same size. Used only when the file has something to be
    /// verified against (a checksum given or from a checksum file, a server digest, piece hashes),
    /// unless ``mirrorsUnverified``; otherwise only the URL asked for is used, with a warning.
    public var mirrors: [URL] = []
    /// Also takes the mirrors a server names (RFC 6249 `Link: <…>; rel=duplicate`, as mirror
    /// redirectors send them) as sources, when the file can be verified (default true;
    /// `--no-linked-mirrors` turns it off).
    public var usesLinkedMirrors = true
    /// In a batch, an item saved into a folder whose URL turns out to be a Metalink document (served
    /// as `application/metalink4+xml`, or named `.meta4`) downloads the file the document describes
    /// instead of the document (default true; `--no-follow-metalink` saves the document itself).
    public var followsMetalink = true
    /// Mixes the sources even when nothing can verify the file (`--mirrors-unverified`): sources that
    /// differ would then give a file made of both.
    public var mirrorsUnverified = false
    /// Hashes of the file's pieces (a Metalink file's `<pieces>`): each piece is checked as the hash
    /// reaches it, and one that does not match is fetched again, from another source where there is
    /// one, rather than the whole file.
    public var pieceHashes: PieceHashes? = nil
    /// Whole-file checksums from a document that describes the file (a Metalink file's `<hash>`):
    /// checked like ``checksums``, and reported as that document's.
    public var describedChecksums: DescribedChecksums? = nil
    /// The size the file must have (a Metalink file's `<size>`): a source of another size is not used,
    /// and a URL asked for of another size fails the download.
    public var expectedSize: Int64? = nil
    /// Set when the download is a document Fastpull reads for itself (``DocumentFetch``): nothing of
    /// it is read past ``Limits/largestDocument``.
    var document: DocumentFetch? = nil

    /// Creates a configuration; every parameter has the documented default.
    public init(
        connections: ConnectionCount = .automatic,
        maximumConnections: Int = Defaults.maximumConnections,
        minimumSegmentSize: Int64 = 1 << 20,
        checksums: [Checksum] = [],
        caFile: String? = nil,
        insecure: Bool = false,
        retries: Int = 5,
        connectTimeout: Duration = .seconds(15),
        idleTimeout: Duration = .seconds(30),
        maximumRedirects: Int = 10,
        retryBaseDelay: Duration = .milliseconds(250),
        resumeFromJournal: Bool = true,
        restartWhenRemoteChanges: Bool = true
    ) {
        self.connections = connections
        self.maximumConnections = maximumConnections
        self.stallTimeout = .seconds(10)
        self.lowestSpeed = .standard
        self.maximumConnectionsPerHost = Defaults.maximumConnectionsPerHost
        self.traceFile = nil
        self.minimumSegmentSize = minimumSegmentSize
        self.checksums = checksums
        self.caFile = caFile
        self.insecure = insecure
        self.retries = retries
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.maximumRedirects = maximumRedirects
        self.retryBaseDelay = retryBaseDelay
        self.resumeFromJournal = resumeFromJournal
        self.restartWhenRemoteChanges = restartWhenRemoteChanges
    }

    /// Checksums a document gives for the file, with the document's name.
    public struct DescribedChecksums: Sendable, Hashable {
        /// How the document is named in reports: `Metalink file x.meta4`.
        public var document: String
        /// The checksums.
        public var checksums: [Checksum]

        /// Checksums from `document`.
        public init(document: String, checksums: [Checksum]) {
            self.document = document
            self.checksums = checksums
        }
    }

    /// Every whole-file checksum known before a request, with where it came from: the given ones,
    /// then a describing document's.
    var knownChecksums: [ChecksumExpectation] {
        var known = checksums.map { ChecksumExpectation($0, source: .user) }
        if let described = describedChecksums {
            known += described.checksums.map {
                ChecksumExpectation($0, source: .document(described.document))
            }
        }
        return known
    }

    /// The lowest speed to hold the download to, once the rate limit is taken into account.
    var effectiveLowestSpeed: LowestSpeed? {
        guard var floor = lowestSpeed, floor.bytesPerSecond > 0, floor.duration > .zero else { return nil }
        if let rate = maximumBytesPerSecond {
            floor.bytesPerSecond = min(floor.bytesPerSecond, max(rate / 4, 1))
        }
        return floor
    }

    /// The most connections this configuration may open: the fixed count, or the automatic maximum.
    var connectionLimit: Int {
        switch connections {
        case .automatic: return maximumConnections
        case .fixed(let count): return count
        }
    }
}

extension Configuration {
    /// The one home of the defaults the library, the batch API and the command line share.
    public enum Defaults {
        /// The most connections `auto` opens for one file: it keeps more than a handful only while
        /// more still pay (per-connection throttles, long round trips, object stores).
        public static let maximumConnections = 64
        /// Connections to one host across every download of the process; as many as `auto` may open
        /// for one file.
        public static let maximumConnectionsPerHost = 64
        /// Files a batch fetches at once.
        public static let parallelFiles = 4
    }

    /// The one home of the limits the library keeps whatever the configuration says.
    public enum Limits {
        /// The most bytes read of a document Fastpull reads for itself rather than saves (a Metalink
        /// file it follows or is given, a checksum file at a URL): 8 MiB holds a Metalink file with
        /// about 90,000 piece hashes (a 90 GiB file in 1 MiB pieces) or a checksum file of about
        /// 80,000 lines, far more than real ones, while the document and what is parsed from it stay
        /// a few tens of MiB in memory. A longer one is refused, before its body when its length is
        /// declared, at this many bytes when not.
        public static let largestDocument: Int64 = 8 << 20
        /// The most mirrors taken from the `Link: <…>; rel=duplicate` fields of one file (RFC 6249),
        /// in the server's order of preference: a mirror redirector names a handful, and each mirror
        /// costs a probe and connections. The rest are left out with a warning; mirrors given in
        /// ``Configuration/mirrors`` are not counted.
        public static let linkedMirrors = 8
    }

    /// The text of a checksum file, and the path or URL it came from.
    ///
    /// The text is what `sha256sum`, `sha512sum`, `sha1sum`, `md5sum` and `shasum` write (`HEX  name`,
    /// `HEX *name`), the BSD `--tag` and OpenSSL form (`SHA256 (name) = HEX`), or a single bare digest,
    /// which applies whatever the file's name. CRLF line ends, blank lines and comments are fine. The
    /// download uses the entry for the output file's name, else for the last path component of the URL
    /// (as given, then after redirects); an exact name wins over a match of the last path component.
    /// A file without a usable entry fails the download before any byte is fetched.
    public struct ChecksumFileContents: Sendable, Hashable {
        /// Where the text came from. Errors and the ``Report`` name it, and a name such as `SHA512SUMS`
        /// or `x.iso.md5` picks the algorithm when the file lists several for one name.
        public var source: String
        /// The file's contents.
        public var text: String

        /// Checksum file text read from `source` (a path or URL).
        public init(source: String, text: String) {
            self.source = source
            self.text = text
        }
    }
}
