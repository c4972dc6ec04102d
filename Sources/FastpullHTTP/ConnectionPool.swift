import FastpullNet
import FoundationEssentials
import Synchronization

/// The connections of one download: the factory that opens new ones (directly, to a forward proxy for
/// `http://` origins, or through a `CONNECT` tunnel for `https://` origins) and the ``ConnectionCache``
/// of kept-alive ones it takes from and gives back to (its own, or one a batch shares). It also builds
/// the download's requests, since what goes in them (absolute-form target, proxy credentials, the
/// user's fields) depends on the route to the origin.
///
/// A connection taken from the pool belongs to the taker alone until it is given back.
package final class ConnectionPool: Sendable {
    private let cache: ConnectionCache
    /// Whether ``cache`` belongs to this pool alone (then ``closeAll()`` empties it).
    private let ownsCache: Bool
    private let quickestConnect = Mutex<Duration?>(nil)
    package let tlsOptions: TLSOptions
    package let timeouts: Timeouts
    /// Which addresses its connections may use (`-4`, `-6`, `--resolve`).
    package let addressing: Addressing
    /// The user's header fields, credentials and `User-Agent`.
    package let settings: RequestSettings
    /// Which origins go through which proxy.
    package let proxies: ProxyRules
    /// Paces what every connection of the download receives, if a rate limit is set.
    package let limiter: RateLimiter?
    /// Told of every request head sent and the response head that answered it (`--verbose`).
    package let onExchange: (@Sendable (RequestHead, ResponseHead) -> Void)?
    /// Counts this pool's connections while they are open, by host (the client's).
    package let census: ConnectionCensus?
    /// The part of the file the download fetches (`--range`), nil for all of it: requests ask for
    /// bytes inside it and answers are told in its terms (``ByteWindow``).
    package let window: ByteWindow?
    /// The run's cookies, when it keeps any: sent where they belong, and set by every answer.
    package let cookies: CookieStore?

    /// A pool with `shared` as its cache when that cache's connections are alike (same TLS options and
    /// timeouts) and no rate limit paces this pool's; with a cache of its own otherwise.
    package init(
        tlsOptions: TLSOptions, timeouts: Timeouts, settings: RequestSettings = .standard,
        proxies: ProxyRules = .direct, limiter: RateLimiter? = nil, shared: ConnectionCache? = nil,
        census: ConnectionCensus? = nil, addressing: Addressing = .standard, window: ByteWindow? = nil,
        cookies: CookieStore? = nil, onExchange: (@Sendable (RequestHead, ResponseHead) -> Void)? = nil
    ) {
        self.window = window
        self.cookies = cookies
        self.addressing = addressing
        self.census = census
        self.onExchange = onExchange
        self.tlsOptions = tlsOptions
        self.timeouts = timeouts
        self.settings = settings
        self.proxies = proxies
        self.limiter = limiter
        if let shared, limiter == nil, shared.tlsOptions == tlsOptions, shared.timeouts == timeouts,
            shared.addressing == addressing
        {
            cache = shared
            ownsCache = false
        } else {
            cache = ConnectionCache(tlsOptions: tlsOptions, timeouts: timeouts, addressing: addressing)
            ownsCache = true
        }
    }

    /// The quickest new connection so far (TCP, plus TLS where used): about one round trip, or a few
    /// with TLS. Nil before the first.
    package var quickestConnectTime: Duration? { quickestConnect.withLock { $0 } }

    /// How `origin` is reached.
    package func route(to origin: Origin) -> ProxyRoute { proxies.route(to: origin) }

    /// The request head for `url` on a connection to `origin` (see ``Requests/make``).
    package func request(
        _ method: String, _ url: URL, origin: Origin, range: ClosedRange<Int64>? = nil,
        ifRange: String? = nil,
        extraHeaders: [(name: String, value: String)] = []
    ) -> RequestHead {
        var request = Requests.make(
            method, url, origin: origin, range: range, ifRange: ifRange,
            extraHeaders: window == nil ? extraHeaders : extraHeaders.filter { $0.name != "Range" },
            settings: settings, route: route(to: origin))
        if let window, method == "GET" {
            request.headers.remove(name: "Range")
            request.headers.add(name: "Range", value: window.rangeValue(for: range))
        }
        // A Cookie field the user gave for this origin wins over the jar's.
        if let cookies, !request.headers.contains(name: "Cookie"), let value = cookies.header(for: url) {
            request.headers.add(name: "Cookie", value: value)
        }
        return request
    }

    /// `head`, the answer to a `method` request, in the terms of the download's ``window`` (as it
    /// came without one). Throws, closing `connection`, for an answer that is not bytes of the window.
    package func translated(_ head: ResponseHead, method: String, on connection: HTTPConnection) throws
        -> ResponseHead
    {
        guard let window else { return head }
        do {
            return try window.translate(head, method: method)
        } catch {
            connection.close()
            throw error
        }
    }

    /// Sends `request` (built for `origin`) and reads the answer's head, on an idle connection to
    /// `origin` or a new one. A kept-alive connection found dead only once the request went out (the
    /// server closed it before answering, or reset it) costs nothing but a reconnect: the request goes
    /// once more on a new connection, and no failure is counted.
    ///
    /// While in use the connection is attached to `slot`, so that cancellation reaches it; on success it
    /// stays attached and the caller, once the body is read, detaches it and gives it back (or keeps it
    /// for its next request). Blocks: call from a connection thread.
    ///
    /// `preferring`: the caller's own idle connection from its previous request, used first when it
    /// goes to `origin` (else it goes back to the idle ones). A connection thread that keeps its own
    /// keeps its speed: on a link that serves some connections slower than others, one taken from
    /// the idle ones may be a slow one another thread left.
    package func exchange(
        _ request: RequestHead, to origin: Origin, slot: CancellationSlot,
        preferring own: HTTPConnection? = nil
    ) throws -> (connection: HTTPConnection, head: ResponseHead) {
        var fresh = false
        var own = own
        while true {
            let connection = try self.connection(to: origin, fresh: fresh, preferring: own.take())
            do {
                try slot.attach(connection)
            } catch {
                connection.close()
                throw error
            }
            let reused = connection.wasUsed
            do {
                try connection.send(request)
                let head = try connection.readHead()
                onExchange?(request, head)
                if let cookies {
                    let target =
                        request.target.hasPrefix("/") ? origin.description + request.target : request.target
                    if let url = URL(string: target) {
                        for value in head.headers.values(for: "Set-Cookie") {
                            cookies.store(setCookie: value, from: url)
                        }
                    }
                }
                if head.status == 407, case .forward(let proxy) = route(to: origin) {
                    // The proxy, not the origin, wants credentials.
                    connection.discardBody(of: head, method: request.method)
                    throw TransferError.status(
                        407,
                        reason:
                            "Proxy Authentication Required (the proxy \(proxy) wants credentials: give them in the proxy URL, http://USER:PASSWORD@\(proxy.authority))",
                        retryAfter: nil)
                }
                return (connection, try translated(head, method: request.method, on: connection))
            } catch {
                slot.detach()
                giveBack(connection)
                guard reused, !fresh, Self.isStale(error), !slot.isCancelled else { throw error }
                fresh = true
            }
        }
    }

    /// Whether `error`, on a kept-alive connection before any byte of an answer, says only that the
    /// server had closed it.
    private static func isStale(_ error: any Error) -> Bool {
        switch error {
        case HTTPBodyError.closedBeforeResponse: return true
        case NetError.reset: return true
        default: return false
        }
    }

    /// An idle connection to `origin` (one the server has closed meanwhile is dropped), or a new one
    /// (always with `fresh`): `own`, the caller's, first (to another origin, it goes back to the idle
    /// ones). Blocks: call from a connection thread.
    package func connection(to origin: Origin, fresh: Bool = false, preferring own: HTTPConnection? = nil)
        throws
        -> HTTPConnection
    {
        if let own {
            if own.origin != origin {
                giveBack(own)
            } else if fresh || own.isDeadWhileIdle {
                own.close()
            } else {
                return own
            }
        }
        let route = route(to: origin)
        let key = ConnectionCache.Key(origin: origin, proxy: route.proxy)
        while true {
            switch try cache.lease(key, fresh: fresh) {
            case .reuse(let reused):
                if !reused.isDeadWhileIdle { return reused }
                reused.close()
            case .open(let opening):
                return try open(opening, to: origin, route: route)
            }
        }
    }

    /// Opens the connection `opening` stands for, to `origin` over `route`. Blocks.
    private func open(_ opening: consuming ConnectionCache.Opening, to origin: Origin, route: ProxyRoute)
        throws -> HTTPConnection
    {
        let transport: any Transport
        // Loaded once per download; not part of a connection's setup time.
        let context = origin.secure ? try tlsContext() : nil
        let started = ContinuousClock.now
        switch route {
        case .direct:
            transport = try Connector.connect(
                host: origin.host, port: origin.port, tls: context, timeouts: timeouts, addressing: addressing
            )
        case .forward(let proxy):
            do {
                transport = try Connector.connect(
                    host: proxy.host, port: proxy.port, tls: nil, timeouts: timeouts, addressing: addressing)
            } catch {
                throw NetError.proxy("\(proxy)", error)
            }
        case .socks(let proxy):
            transport = try SOCKS5.open(
                to: origin, through: proxy, tls: context, timeouts: timeouts, addressing: addressing)
        case .tunnel(let proxy):
            do {
                transport = try ProxyTunnel.open(
                    Requests.connect(to: origin, through: proxy, settings: settings), to: origin,
                    through: proxy, tls: context ?? (try tlsContext()), timeouts: timeouts,
                    addressing: addressing)
            } catch let error as NetError where error.isReachingTheProxy {
                throw NetError.proxy("\(proxy)", error)
            }
        }
        // A head gets as long in all as one read may wait: a trickling head is as dead as a silent one.
        let deadline = timeouts.idle
        let took = ContinuousClock.now - started
        quickestConnect.withLock { $0 = min($0 ?? took, took) }
        let census = census
        census?.opened(origin.hostKey)
        let paced = limiter.map { RateLimiter.PacedTransport(transport, limiter: $0) as any Transport }
        return try opening.admit { id, closed in
            HTTPConnection(
                origin: origin, transport: paced ?? transport, headDeadline: deadline, setupTime: took,
                leaseID: id,
                onClose: {
                    closed()
                    census?.closed(origin.hostKey)
                })
        }
    }

    /// Takes a connection back for reuse if its last response allows it; closes it otherwise.
    package func giveBack(_ connection: HTTPConnection) {
        cache.giveBack(
            connection,
            as: ConnectionCache.Key(origin: connection.origin, proxy: route(to: connection.origin).proxy))
    }

    /// Closes every idle connection, unless the cache is shared: then they stay for the next download.
    package func closeAll() {
        if ownsCache { cache.closeAll() }
    }

    /// The TLS context shared by all connections, created on first use.
    package func tlsContext() throws -> TLSContext {
        try cache.tlsContext()
    }
}
