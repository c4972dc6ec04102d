import FastpullHTTP
import FoundationEssentials

extension Configuration {
    /// How many connections fetch, to one host at most, over which segments, and how fast.
    public struct Connections: Sendable {
        /// How many connections fetch in parallel: `.automatic` (the default) or a fixed count.
        public var count: ConnectionCount = .automatic
        /// The most connections `.automatic` opens (1...128, default ``Defaults/maximumConnections``).
        public var maximum: Int = Defaults.maximumConnections
        /// Connections to one host (a name and a port), across every download of the same
        /// ``FastpullClient`` (default ``Defaults/maximumConnectionsPerHost``).
        public var maximumPerHost: Int = Defaults.maximumConnectionsPerHost
        /// No segment is planned smaller than this many bytes (except the file's last one).
        public var minimumSegmentSize: Int64 = 1 << 20
        /// When a connection sends its next request before its current answer ends (``Pipelining``).
        public var pipelining: Pipelining = .automatic
        /// A limit on the total download rate in bytes per second, across all connections of the
        /// download (at least 1); nil for none.
        public var maximumBytesPerSecond: Int64? = nil

        /// The defaults.
        public init() {}
    }

    /// How long a connection, a silent one, or a slow download may take.
    public struct Timeouts: Sendable {
        /// How long to wait for a TCP connection (and TLS handshake) before giving up.
        public var connect: Duration = .seconds(15)
        /// How long a connection may go without receiving a byte before it is abandoned and retried.
        public var idle: Duration = .seconds(30)
        /// A connection that receives nothing for this long gives its range back and is replaced.
        public var stall: Duration = .seconds(10)
        /// The lowest speed the download must keep up (default ``LowestSpeed/standard``, 1 KiB/s over
        /// a minute; nil for none). Below a ``Connections/maximumBytesPerSecond`` of its own, the
        /// floor is a quarter of that rate.
        public var lowestSpeed: LowestSpeed? = .standard

        /// The defaults.
        public init() {}
    }

    /// How often a failure is tried again, and how long between tries.
    public struct Retries: Sendable {
        /// How many times one segment is retried after a failure that made no progress.
        public var limit: Int = 5
        /// The first retry waits this long; each later one twice as long (with jitter), up to 8
        /// seconds.
        public var baseDelay: Duration = .milliseconds(250)
        /// A refused connection (nothing listens on the port), and a host name that does not resolve
        /// (yet: a container network adds a service's name when it starts), is retried like any
        /// failure, with the whole ``limit`` and the backoff — for a service still starting (curl's
        /// `--retry-connrefused`). False (the default) tries it twice more, 100 ms apart: a port
        /// nobody listens on seldom comes back in a second.
        public var retriesRefusedConnections = false
        /// How long failures in a row may be retried, from the first of them (curl's
        /// `--retry-max-time`): a retry whose wait would end later is not made, whatever ``limit``
        /// allows. Nil (the default): only ``limit`` counts.
        public var maximumTime: Duration? = nil

        /// The defaults.
        public init() {}
    }

    /// What every request carries, through which proxy, and which redirects it follows.
    public struct Request: Sendable {
        /// Extra header fields for every request. `Authorization`, `Cookie` and `Proxy-Authorization`
        /// go only to the origin (scheme, host, port) of the URL asked for, never to another origin
        /// after a redirect, and are never written to the journal, a trace or a message.
        ///
        /// A field replaces Fastpull's own field of the same name (`Accept`, `User-Agent`, …); one with
        /// an empty value only removes Fastpull's. `Host`, `Range`, `If-Range`, `Content-Length`,
        /// `Transfer-Encoding` and `Connection` frame each request and cannot be set: the download
        /// fails with ``FastpullError/Code/usage`` naming the field, as it does for a malformed name or
        /// a value holding a line break. Through a `CONNECT` tunnel, `Proxy-Authorization` goes to the
        /// proxy (in the `CONNECT`) unless the proxy URL has credentials of its own, never inside the
        /// tunnel.
        public var headers: [Header] = []
        /// HTTP Basic credentials for the origin of the URL asked for; never sent to another origin.
        /// (User information inside the URL itself is not used: put it here.) A user name cannot
        /// contain `:`.
        public var credentials: Credentials? = nil
        /// Replaces `fastpull/<version>` in `User-Agent`; an empty string sends no `User-Agent`. A
        /// `User-Agent` in ``headers`` wins over both.
        public var userAgent: String? = nil
        /// Connect over IPv4 only, or IPv6 only (default: either, in the system's order; the command
        /// line's `-4` and `-6`).
        public var addressFamily: AddressFamily = .any
        /// Names pinned to addresses: a connection to `host` on `port` goes to these instead of what
        /// the name resolves to (curl's `--resolve`): one edge of a CDN, a cache node, a host not in
        /// DNS. The URL, `Host` and TLS name stay the host's.
        public var pinnedAddresses: [AddressPin] = []
        /// The IP address, or the name of a network interface, connections are made from (curl's
        /// `--interface`, wget's `--bind-address`; default nil: the system's choice). Each connection
        /// is bound to that address, or to the interface's address of the peer's family, before it
        /// connects. One that cannot be used (no such address or interface, none of the peer's
        /// family, or one the system will not bind to) fails the download with
        /// ``FastpullError/Code/network``, without retries.
        public var localAddress: String? = nil
        /// The cookies sent, and kept from `Set-Cookie` answers (default nil: none sent, none kept).
        /// Downloads given the same jar share its cookies.
        public var cookies: CookieJar? = nil
        /// The proxy to use, HTTP or SOCKS5 (default: none; the command line uses the environment).
        /// `.environment` is read when the download starts.
        public var proxy: ProxySetting = .none
        /// How many redirects the probe follows before failing.
        public var maximumRedirects: Int = 10
        /// Follows a redirect from `https` to plain `http`. False (the default) refuses such a
        /// downgrade with ``FastpullError/Code/httpStatus``: it would expose the download to anyone on
        /// the path. Even when allowed, `Authorization`, `Cookie`, `Proxy-Authorization` and the
        /// credentials are not sent after it (the scheme is part of the origin).
        public var allowsInsecureRedirects = false
        /// Fetch only this part of the file (curl's `-r`; default nil: all of it). The saved file is
        /// exactly those bytes, fetched in segments and resumed like any file. A server that answers
        /// a request for them with the whole file (it ignores ranges) fails the download with
        /// ``FastpullError/Code/httpStatus`` before a byte is written, as does a part that starts past
        /// the file's end. Digests the server offers describe the whole file and are not used; a
        /// checksum given is the part's. No origin record is kept on the file: it is not the URL's
        /// file.
        public var byteRange: ByteRange? = nil

        /// The defaults.
        public init() {}
    }

    /// Which certificates are trusted.
    public struct TLS: Sendable {
        /// A PEM file of extra certificate authorities to trust, besides the system store.
        public var caFile: String? = nil
        /// Skips TLS certificate and hostname verification. Unsafe; for testing only.
        public var insecure = false
        /// A PEM file of the client certificate (its chain may follow) presented to a server that asks
        /// for one (curl's `--cert`; default nil: none). A certificate or key that cannot be loaded,
        /// or a key that is not the certificate's, fails the download with ``FastpullError/Code/tls``.
        public var certificateFile: String? = nil
        /// The PEM file of ``certificateFile``'s private key, unencrypted (curl's `--key`); nil when
        /// the key is in the certificate's file.
        public var keyFile: String? = nil

        /// The defaults.
        public init() {}
    }

    /// What the file must match before it appears under its name, and what is kept when it does not.
    public struct Integrity: Sendable {
        /// Digests the file must match before it is moved into place.
        public var checksums: [Checksum] = []
        /// Checksum files whose entry for this download the file must match as well.
        public var checksumFiles: [ChecksumFileContents] = []
        /// Whole-file checksums from a document that describes the file (a Metalink file's `<hash>`):
        /// checked like ``checksums``, and reported as that document's.
        public var describedChecksums: DescribedChecksums? = nil
        /// Hashes of the file's pieces (a Metalink file's `<pieces>`): each piece is checked as the
        /// hash reaches it, and one that does not match is fetched again, from another source where
        /// there is one, rather than the whole file.
        public var pieceHashes: PieceHashes? = nil
        /// The size the file must have (a Metalink file's `<size>`): a source of another size is not
        /// used, and a URL asked for of another size fails the download.
        public var expectedSize: Int64? = nil
        /// The largest file to accept (curl's `--max-filesize`; default nil: any). A file the server
        /// says is larger fails with ``FastpullError/Code/integrity`` before a byte of it is fetched;
        /// one whose size the server does not tell fails when it ends larger, and is not kept.
        public var maximumSize: Int64? = nil
        /// Computes the file's SHA-256 as it downloads and reports it (``Report/sha256``), even when
        /// no checksum asks for it (default true). SHA-256 costs about 0.7 CPU-seconds per GiB, as
        /// much as TLS itself: where the CPU is the limit (a fast link, a small machine) it is time.
        /// False leaves ``Report/sha256`` empty unless a checksum to verify is a SHA-256; every
        /// expected checksum is checked either way. The command line sets it only with `--sha256`.
        public var computesSHA256 = true
        /// A file a download of this URL saved earlier (it carries its origin record) is kept only
        /// once its bytes, hashed now, have the SHA-256 recorded then — not on its size and
        /// modification time alone; one saved without a SHA-256 cannot be verified and is not kept
        /// (default false; the command line's `--verify`). Needs ``computesSHA256``.
        public var verifiesSavedFiles = false
        /// After a size or checksum mismatch, keep the bytes in `<output>.part` for inspection instead
        /// of deleting them (`--keep-partial`). The journal is deleted either way, so a later run
        /// starts over rather than resume into bytes known to be bad.
        public var keepsPartialOnMismatch = false

        /// The defaults.
        public init() {}
    }

    /// The file's other sources.
    public struct Sources: Sendable {
        /// Other URLs of the same file (mirrors, `--mirror`): segments go to whichever source delivers
        /// best, and a source that fails, stalls or sends bytes that do not verify is dropped while
        /// the others finish. Each must serve the same size. Used only when the file has something to
        /// be verified against (a checksum given or from a checksum file, a server digest, piece
        /// hashes), unless ``mixesUnverified``; otherwise only the URL asked for is used, with a
        /// warning.
        public var mirrors: [URL] = []
        /// Also takes the mirrors a server names (RFC 6249 `Link: <…>; rel=duplicate`, as mirror
        /// redirectors send them) as sources, when the file can be verified (default true;
        /// `--no-linked-mirrors` turns it off).
        public var usesLinkedMirrors = true
        /// In a batch, an item saved into a folder whose URL turns out to be a Metalink document
        /// (served as `application/metalink4+xml`, or named `.meta4`) downloads the file the document
        /// describes instead of the document (default true; `--no-follow-metalink` saves the document
        /// itself).
        public var followsMetalink = true
        /// Mixes the sources even when nothing can verify the file (`--mirrors-unverified`): sources
        /// that differ would then give a file made of both.
        public var mixesUnverified = false

        /// The defaults.
        public init() {}
    }

    /// What to do with what is on disk already.
    public struct Resume: Sendable {
        /// Continues from the journal an interrupted download left, when it matches the remote file.
        /// False (`--restart`) discards any journal and starts from zero.
        public var fromJournal = true
        /// When the remote file changed since the journal was written (or during the download), start
        /// over from zero (true) or fail with ``FastpullError/Code/remoteChanged`` (false,
        /// `--no-restart`).
        public var restartsWhenRemoteChanges = true
        /// Whether a file at the destination is fetched again and replaced once the new one is
        /// verified (true: the command line's `--force`). False, the default, as on the command line:
        /// a file there is kept when it matches every known checksum or when it is the version a run
        /// saved and the server still offers (the report then says it was already present, nothing
        /// fetched); the version a run saved that the server has replaced is fetched again in its
        /// place; any other file fails the download with ``FastpullError/Code/localIO`` before a byte
        /// is fetched (or is continued, with ``adoptsPartialFile``). A file that appears during the
        /// download is left alone too: the download fails with ``FastpullError/Code/localIO`` and
        /// keeps the verified bytes in `<output>.part`, where a later run that may replace finds them
        /// complete. A device, FIFO or folder at the destination is never replaced. In a batch, its
        /// `BatchOptions.existingFiles` decides instead.
        public var replacesExistingFile = false
        /// Where a file appeared at the destination during the download (not replacing it), the
        /// verified file is saved as the first free `name.1`, `name.2`, … of this path (the name asked
        /// for, before any renaming) instead of failing: what a batch's
        /// ``BatchOptions/ExistingFiles/rename`` (`--auto-rename`) asks for. Nil: it fails.
        package var renamingBase: String? = nil
        /// Gives the saved file the server's `Last-Modified` as its modification time, as wget does
        /// and curl and aria2 do with `-R` (default false: the time it was saved; the command line's
        /// `-R`/`--remote-time`). A server that sends none leaves the time it was saved.
        public var keepsServerTime = false
        /// Takes a file at the destination that Fastpull did not write (another program's partial
        /// download: `curl -r`, `wget -c` cut short) as the beginning of the download, once the
        /// server proves it is: its last bytes (up to 64 KiB) fetched again are the same. The rest is
        /// fetched after it, and the verified whole replaces it. Bytes that differ fail the download
        /// with ``FastpullError/Code/integrity`` and leave the file as it was; so does a file longer
        /// than the server's. Default false (the command line's `-c`/`--continue` sets it).
        public var adoptsPartialFile = false

        /// The defaults.
        public init() {}
    }

    /// What the download tells beyond its events.
    public struct Diagnostics: Sendable {
        /// Report every request head sent and the response head that answered it as an
        /// ``Event/Kind/exchange`` event (credentials and signatures redacted): what `--verbose`
        /// prints.
        public var verbose = false
        /// Where to write the per-connection timeline (newline-delimited JSON), if anywhere.
        public var traceFile: String? = nil

        /// The defaults.
        public init() {}
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

    /// The address families a connection may use (``Configuration/Request/addressFamily``).
    public enum AddressFamily: Sendable, Hashable {
        /// IPv4 and IPv6, in the system's order.
        case any
        /// IPv4 only (`-4`).
        case ipv4
        /// IPv6 only (`-6`).
        case ipv6
    }

    /// A name pinned to addresses (``Configuration/Request/pinnedAddresses``).
    public struct AddressPin: Sendable, Hashable {
        /// The host name, as in the URL.
        public var host: String
        /// The port, as in the URL (80 and 443 when it names none).
        public var port: Int
        /// The IP addresses to connect to instead, tried in order.
        public var addresses: [String]

        /// `host` on `port` goes to `addresses`.
        public init(host: String, port: Int, addresses: [String]) {
            self.host = host
            self.port = port
            self.addresses = addresses
        }
    }
}
