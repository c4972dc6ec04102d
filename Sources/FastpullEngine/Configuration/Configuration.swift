import FastpullHTTP
import FastpullNet
import FoundationEssentials

/// How a download runs, by concern: ``connections`` (how many, how fast), ``timeouts``, ``retries``,
/// ``request`` (what each request carries and where it goes), ``tls``, ``integrity`` (what the file
/// must match), ``sources`` (mirrors), ``resume`` (what is on disk already) and ``diagnostics``. Every
/// setting has one home and a default, so `Configuration()` is a good start:
///
/// ```swift
/// var configuration = Configuration()
/// configuration.connections.count = .fixed(8)
/// configuration.integrity.checksums = [try Checksum(parsing: "sha256:…")]
/// ```
public struct Configuration: Sendable {
    /// How many connections fetch, to one host at most, over which segments, and how fast.
    public var connections = Connections()
    /// How long a connection, a silent one, or a slow download may take.
    public var timeouts = Timeouts()
    /// How often a failure is tried again, and how long between tries.
    public var retries = Retries()
    /// What every request carries (header fields, credentials, `User-Agent`), through which proxy,
    /// and which redirects it follows.
    public var request = Request()
    /// Which certificates are trusted.
    public var tls = TLS()
    /// What the file must match before it appears under its name, and what is kept when it does not.
    public var integrity = Integrity()
    /// The file's other sources: mirrors given, named by the server, or in a Metalink document.
    public var sources = Sources()
    /// What to do with what is on disk already: a journal to continue from, a file to replace.
    public var resume = Resume()
    /// What the download tells beyond its events: request and response heads, a timeline.
    public var diagnostics = Diagnostics()
    /// Set when the download is a document Fastpull reads for itself (``DocumentFetch``): nothing of
    /// it is read past ``Limits/largestDocument``.
    package var document: DocumentFetch? = nil
    /// Forces how received bytes reach the file (``WritePath``), as `FASTPULL_WRITE_PATH` does; nil
    /// chooses by the machine. For tests that must take each path whatever the machine.
    var writePath: WritePath.Forced? = nil

    /// A configuration with every default; `connections` and `checksums`, the two a build tool sets
    /// most, can be given here.
    public init(connections: ConnectionCount = .automatic, checksums: [Checksum] = []) {
        self.connections.count = connections
        self.integrity.checksums = checksums
    }

    /// This configuration with `change` applied: `Configuration().with { $0.tls.caFile = path }`.
    public func with(_ change: (inout Configuration) -> Void) -> Configuration {
        var changed = self
        change(&changed)
        return changed
    }

    /// What a download's hash computes: SHA-256 where it is reported (``Integrity/computesSHA256``),
    /// then `needed` (the expected checksums' algorithms). Repeats are dropped by whatever hashes them
    /// (``DigestSet``).
    package func digestAlgorithms(needing needed: [Digest.Algorithm]) -> [Digest.Algorithm] {
        (integrity.computesSHA256 ? [.sha256] : []) + needed
    }

    /// Every whole-file checksum known before a request, with where it came from: the given ones,
    /// then a describing document's.
    package var knownChecksums: [ChecksumExpectation] {
        var known = integrity.checksums.map { ChecksumExpectation($0, source: .user) }
        if let described = integrity.describedChecksums {
            known += described.checksums.map {
                ChecksumExpectation($0, source: .document(described.document))
            }
        }
        return known
    }

    /// The lowest speed to hold the download to, once the rate limit is taken into account.
    package var effectiveLowestSpeed: LowestSpeed? {
        guard var floor = timeouts.lowestSpeed, floor.bytesPerSecond > 0, floor.duration > .zero else {
            return nil
        }
        if let rate = connections.maximumBytesPerSecond {
            floor.bytesPerSecond = min(floor.bytesPerSecond, max(rate / 4, 1))
        }
        return floor
    }

    /// The most connections this configuration may open: the fixed count, or the automatic maximum.
    var connectionLimit: Int {
        switch connections.count {
        case .automatic: return connections.maximum
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
        /// ``Configuration/Sources/mirrors`` are not counted.
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

extension Configuration.Request {
    /// The addresses connections may use, as the network layer takes them.
    package var addressing: Addressing {
        var pinned: [String: [String]] = [:]
        for pin in pinnedAddresses {
            pinned[Addressing.key(host: pin.host, port: pin.port), default: []] += pin.addresses
        }
        let family: Addressing.Family =
            switch addressFamily {
            case .any: .any
            case .ipv4: .ipv4
            case .ipv6: .ipv6
            }
        return Addressing(family: family, pinned: pinned, local: localAddress)
    }
}

extension Configuration.TLS {
    /// The options as the network layer takes them.
    package var options: TLSOptions {
        TLSOptions(caFile: caFile, insecure: insecure, certificateFile: certificateFile, keyFile: keyFile)
    }
}
