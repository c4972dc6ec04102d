/// How a download runs. Every property has a default, so `Configuration()` is a good start.
public struct Configuration: Sendable {
    /// How many connections fetch segments in parallel (1...128).
    public var connections: Int
    /// No segment is planned smaller than this many bytes (except the file's last one).
    public var minimumSegmentSize: Int64
    /// Digests the file must match before it is moved into place.
    public var checksums: [Checksum]
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
    /// Continues from the journal an interrupted download left, when it matches the remote file.
    /// False (`--restart`) discards any journal and starts from zero.
    public var resumeFromJournal: Bool
    /// When the remote file changed since the journal was written (or during the download), start
    /// over from zero (true) or fail with ``FastpullError/Code/remoteChanged`` (false, `--no-restart`).
    public var restartWhenRemoteChanges: Bool
    /// The first retry waits this long; each later one twice as long (with jitter), up to 8 seconds.
    public var retryBaseDelay: Duration

    /// Creates a configuration; every parameter has the documented default.
    public init(
        connections: Int = 8,
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
}
