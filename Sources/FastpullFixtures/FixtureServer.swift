import Foundation

/// A loopback HTTP/1.1 (and HTTPS) server for tests and benchmarks, with ranges, keep-alive and fault
/// injection chosen per request by query parameters.
///
/// It listens on a free port as soon as it is created and serves on plain threads with blocking I/O
/// (one listener thread, one thread per connection), never on the Swift concurrency pool. `stop()` (or
/// dropping the last reference) closes the listener and every connection, including stalled ones.
///
/// Resources:
/// - `/gen/<size>[?seed=N]`: ``FixtureContent`` for the seed (default 1), `size` bytes (`K`, `M`, `G`
///   suffixes are binary multiples). Strong ETag `"gen-<size>-<seed>"`, fixed `Last-Modified`,
///   `Accept-Ranges: bytes`.
/// - `/files/<name>`: a file from ``Configuration/filesDirectory`` (ETag from size and mtime).
/// - `/redirect/<n>/<rest>`: redirect to `/redirect/<n-1>/<rest>`; `/redirect/0/<rest>` to `/<rest>`; the
///   query is kept. `/redirect-loop` redirects to itself; `/redirect-to?url=ENC` to the decoded URL.
///   `code=301|302|303|307|308` picks the status (302 by default).
/// - `/__stats`: ``FixtureStats`` as JSON (not counted itself).
///
/// Query parameters (combine freely; counters are per server and per request target, path plus query):
/// `rate=BPS`, `slow-every=K&slow-rate=BPS`, `ttfb=MS`, `drop-after=N[&drops=K]`,
/// `stall-after=N[&stalls=K]`, `no-ranges=1`, `chunked=1`, `bad-range=1`,
/// `status=CODE[&statuses=K][&status-ranged=1][&retry-after=S]`, `head=CODE`, `corrupt=OFFSET`, `close=1`,
/// `quiet-close=1` (the connection closes after each answer, which does not say so),
/// `if-range=ignore` (ranges served whatever `If-Range` says), `alternate=1` (`/gen`: every second GET
/// serves the next seed, with its own ETag), `validators=weak|changed-without-etag` (`/gen`: a weak
/// ETag and no Last-Modified, or no ETag on the other version), `head-length=N` (HEAD announces N
/// bytes), `multipart=1` (206 framed as `multipart/byteranges`), `largest-answer=N` (206s of at most N bytes),
/// `whole-from=OFFSET` (a range starting at or after OFFSET gets 200 and the whole file),
/// `link=ENC` (a `Link` field), `content-type=ENC`, `disposition=ENC` (a `Content-Disposition` field),
/// `pipeline-cut=N` / `pipeline-long=N` (an answer during which the next request arrived stops N bytes
/// short of its length, or runs N bytes past it, and the next answer follows straight on).
/// Redirects apply only `code`, `ttfb` and `close`; the other faults act at the resource itself.
/// A server made with ``Configuration/basicCredentials`` answers 401 to any request without them.
public final class FixtureServer: Sendable {
    /// Which certificate an HTTPS server presents (all are issued by `Fixtures/certs/ca.pem`).
    public enum Certificate: Sendable, Hashable {
        /// `server.pem`: valid for `localhost`, `127.0.0.1` and `::1`.
        case localhost
        /// `wronghost.pem`: valid only for `wrong.example`.
        case wrongHost
        /// `expired.pem`: names like `server.pem`, but expired on 2021-01-01.
        case expired

        var fileStem: String {
            switch self {
            case .localhost: "server"
            case .wrongHost: "wronghost"
            case .expired: "expired"
            }
        }
    }

    /// How to run a server.
    public struct Configuration: Sendable {
        /// The address to listen on: an IP literal such as `127.0.0.1` or `::1` (`localhost` means
        /// 127.0.0.1). The base URL uses it as written.
        public var host = "127.0.0.1"
        /// The port to listen on; 0 picks a free one.
        public var port = 0
        /// Serve HTTPS with the certificate chosen by `certificate`.
        public var tls: Bool = false
        /// The certificate an HTTPS server presents.
        public var certificate: Certificate = .localhost
        /// A folder whose regular files are served under `/files/<name>`.
        public var filesDirectory: String? = nil
        /// A limit in bytes per second on the content bytes of all connections together.
        public var totalRate: Int? = nil
        /// HTTP Basic credentials every request must carry (`Authorization: Basic …`); a request
        /// without them, or with others, is answered 401 with `WWW-Authenticate: Basic`. Nil (the
        /// default) asks for none.
        public var basicCredentials: (user: String, password: String)? = nil
        /// Called with one line per request (from connection threads) when set; the server logs nothing
        /// otherwise.
        public var requestLog: (@Sendable (String) -> Void)? = nil
        /// Makes an HTTPS server require a client certificate issued by the certificate authorities
        /// in this PEM file (`FixturePaths.certificatesDirectory + "/ca.pem"` issued `client.pem`): a
        /// handshake without one, or with another, fails. Nil (the default) asks for none.
        public var clientCertificateAuthority: String? = nil
        /// Milliseconds an HTTPS server waits before it answers a new connection's handshake: the
        /// client's connection setup then takes as long as on a network with that round trip.
        public var handshakeDelayMilliseconds = 0

        /// The default configuration: plain HTTP on 127.0.0.1, a free port, no limits.
        public init() {}
    }

    private let core: ServerCore

    /// The port the server listens on.
    public let port: Int

    /// `http://HOST:PORT` (or `https://`), with IPv6 hosts in brackets.
    public let baseURL: URL

    /// Starts listening (on a free port unless the configuration names one) and serving.
    public init(_ configuration: Configuration = .init()) throws {
        let tls: TLSServerContext?
        if configuration.tls {
            let directory = FixturePaths.certificatesDirectory
            let stem = configuration.certificate.fileStem
            tls = try TLSServerContext(
                certificateFile: "\(directory)/\(stem).pem", keyFile: "\(directory)/\(stem).key",
                clientCertificateAuthority: configuration.clientCertificateAuthority)
        } else {
            tls = nil
        }
        if let rate = configuration.totalRate, rate <= 0 {
            throw FixtureServerError.badConfiguration("totalRate must be positive, not \(rate)")
        }
        let listener = try Listener.open(host: configuration.host, port: configuration.port)
        do {
            core = try ServerCore(
                listenSocket: listener.socket, tls: tls, filesDirectory: configuration.filesDirectory,
                totalRate: configuration.totalRate,
                authorization: configuration.basicCredentials.map { credentials in
                    "Basic " + Data("\(credentials.user):\(credentials.password)".utf8).base64EncodedString()
                },
                requestLog: configuration.requestLog,
                handshakeDelayNanoseconds: Int64(max(0, configuration.handshakeDelayMilliseconds)) * 1_000_000
            )
        } catch {
            Listener.closeSocket(listener.socket)
            throw error
        }
        port = listener.port
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        baseURL = URL(string: "\(configuration.tls ? "https" : "http")://\(host):\(listener.port)")!
        core.start()
    }

    deinit {
        core.stop()
    }

    /// The URL of `pathAndQuery` on this server, e.g. `url("/gen/1024?seed=2")`.
    public func url(_ pathAndQuery: String) -> URL {
        let suffix = pathAndQuery.hasPrefix("/") ? pathAndQuery : "/" + pathAndQuery
        guard let url = URL(string: baseURL.absoluteString + suffix) else {
            preconditionFailure("not a valid path and query: \(pathAndQuery)")
        }
        return url
    }

    /// The totals counted since the server started or since the last ``resetStats()``.
    public var stats: FixtureStats { core.stats }

    /// The most connections open at once since the server started or since the last
    /// ``resetStats()`` (which sets it to the number open then): accepted, including any that only
    /// asked for `/__stats`, and not yet seen closed by the server. It is no part of ``stats``, whose
    /// totals do not depend on how soon the server notices that a client closed.
    public var peakOpenConnections: Int { core.peakOpenConnections }

    /// The connections open now: accepted, and not yet seen closed by the server (a client's close
    /// is seen as soon as the server's thread for the connection wakes on it).
    public var openConnections: Int { core.openConnections }

    /// Sets the statistics back to zero (fault counters such as `drops=` are kept).
    public func resetStats() {
        core.resetStats()
    }

    /// Forgets which responses already got their fault (`drops=K`, `stalls=K`, `statuses=K`): the
    /// next responses for each URL get them again, as after a restart.
    public func resetFaults() {
        core.resetFaults()
    }

    /// Closes the listener and every connection (including stalled and rate-limited ones) and waits
    /// briefly for the server's threads to finish. Idempotent; also done when the server is deallocated.
    public func stop() {
        core.stop()
    }
}

/// Why a ``FixtureServer`` could not start.
public enum FixtureServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The host is not an IP literal, or the port is out of range.
    case badAddress(String)
    /// A configuration value is invalid.
    case badConfiguration(String)
    /// A system call failed.
    case system(call: String, message: String)
    /// The TLS certificate or key could not be loaded.
    case tls(String)

    /// A one-line description.
    public var description: String {
        switch self {
        case .badAddress(let message): "fixture server: bad address: \(message)"
        case .badConfiguration(let message): "fixture server: \(message)"
        case .system(let call, let message): "fixture server: \(call) failed: \(message)"
        case .tls(let message): "fixture server: TLS: \(message)"
        }
    }
}
