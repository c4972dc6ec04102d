import FastpullNet
import FoundationEssentials

/// Every connection of one kind (the same TLS options and timeouts), from the moment one is asked for
/// until it closes: the one owner that leases them out, takes them back, keeps the idle ones by origin
/// and proxy, and closes them. A ``FastpullClient`` holds one per kind, so that a file after the first
/// (in a batch, or a later download through the same client) reuses a connection (no TCP or TLS
/// handshake) and the CA store is loaded once.
///
/// Its bookkeeping is ``ConnectionStates``, a state machine whose actions (close these, reuse that,
/// open one) run here after its lock. Connections are interchangeable only with the same origin over
/// the same route, and only between downloads whose connections are alike (no rate limit pacing them:
/// ``ConnectionPool`` checks).
///
/// At most ``idleLimit`` wait in all (the oldest goes first), none longer than ``idleLifetime``, and
/// none after ``closeAll(forGood:)``: a client kept for days holds a bounded number of descriptors.
package final class ConnectionCache: Sendable {
    package struct Key: Hashable, Sendable {
        package var origin: Origin
        package var proxy: Proxy?
    }

    /// A lease: an idle connection to reuse, or one to open (``Opening``).
    package enum Lease: ~Copyable {
        case reuse(HTTPConnection)
        case open(Opening)
    }

    /// A connection the cache counts as being opened for a lease: the taker opens it and hands it in
    /// (``admit(_:)``), or drops this value (the opening failed) and the cache forgets it.
    package struct Opening: ~Copyable {
        let id: ConnectionStates<Key>.ID
        let cache: ConnectionCache
        private var settled = false

        init(id: ConnectionStates<Key>.ID, cache: ConnectionCache) {
            self.id = id
            self.cache = cache
        }

        /// The connection `make` builds (given its lease ID and the close report it must call) is the
        /// leased one; it
        /// is closed instead, and this throws `NetError.cancelled`, when the cache was shut down
        /// while it was being opened.
        package consuming func admit(
            _ make: (_ id: Int, _ onClose: @escaping @Sendable () -> Void) -> HTTPConnection
        ) throws -> HTTPConnection {
            settled = true
            let id = id
            let connection = make(id) { [weak cache] in cache?.report { try $0.closed(id) } }
            guard cache.report({ try $0.connected(id) }) ?? false else {
                connection.close()
                throw NetError.cancelled
            }
            return connection
        }

        deinit {
            if !settled { cache.report { [id] in try $0.connectFailed(id) } }
        }
    }

    private struct State {
        var machine = ConnectionStates<Key>(idleLimit: idleLimit, idleLifetime: idleLifetime)
        /// The idle connections, by their machine ID.
        var idle: [ConnectionStates<Key>.ID: HTTPConnection] = [:]
        /// Events the machine refused (each a fault: a connection with two holders).
        var impossible: [ConnectionStates<Key>.Impossible] = []
    }

    package let tlsOptions: TLSOptions
    package let timeouts: Timeouts
    /// Which addresses its connections were opened with (`-4`, `-6`, `--resolve`): a pool shares
    /// only a cache whose connections it could have opened itself.
    package let addressing: Addressing
    private let state = PlainMutex(State())
    private let tls = PlainMutex<TLSContext?>(nil)

    /// Idle connections kept in all; more close the oldest.
    package static let idleLimit = 64
    /// How long a connection may wait unused before it is closed: under most servers' keep-alive
    /// timeouts (nginx 75 s, h2o 10 s, apache 5 s; a connection the server has closed meanwhile costs
    /// one reconnect, see ``ConnectionPool/exchange``).
    package static let idleLifetime: Duration = .seconds(60)

    package init(tlsOptions: TLSOptions, timeouts: Timeouts, addressing: Addressing = .standard) {
        self.tlsOptions = tlsOptions
        self.timeouts = timeouts
        self.addressing = addressing
    }

    /// A connection for `key`: the most recently idle one (unless `fresh`; it may have gone bad
    /// meanwhile: close it and lease again), or one to open. Throws `NetError.cancelled` once the
    /// cache is shut down for good.
    package func lease(_ key: Key, fresh: Bool = false) throws -> Lease {
        let (lease, closing) = state.withLock { state in
            let (lease, expired) = state.machine.lease(key, fresh: fresh, now: .now)
            return (lease, Self.take(expired, from: &state))
        }
        for connection in closing { connection.close() }
        switch lease {
        case .refused: throw NetError.cancelled
        case .connect(let id): return .open(Opening(id: id, cache: self))
        case .reuse(let id):
            guard let connection = state.withLock({ $0.idle.removeValue(forKey: id) }) else {
                preconditionFailure("the connection leased for reuse is not among the idle ones")
            }
            return .reuse(connection)
        }
    }

    /// Takes a leased connection back: it waits for reuse as `key` if its last response allows it,
    /// and is closed otherwise (or once ``closeAll(forGood:)`` has run).
    package func giveBack(_ connection: HTTPConnection, as key: Key) {
        guard let id = connection.leaseID else {
            connection.close()
            return
        }
        let reusable = connection.isReusable
        let closing = state.withLock { state -> [HTTPConnection] in
            do throws(ConnectionStates<Key>.Impossible) {
                let closing = try state.machine.release(id, reusable: reusable, now: .now)
                if state.machine.state(of: id) != .closing { state.idle[id] = connection }
                return Self.take(closing.filter { $0 != id }, from: &state)
                    + (closing.contains(id) ? [connection] : [])
            } catch let impossible {
                state.impossible.append(impossible)
                return []
            }
        }
        for connection in closing { connection.close() }
    }

    /// How many connections wait idle now.
    package var idleCount: Int { state.withLock { $0.machine.count(.idle(since: .now)) } }
    /// How many are leased (in use by a download) now.
    package var leasedCount: Int { state.withLock { $0.machine.count(.leased) } }
    /// How many are open or being opened, in any state.
    package var openCount: Int { state.withLock { $0.machine.openCount } }
    /// The events the state machine refused so far: each is a fault (a connection with two holders,
    /// or one closed twice). Empty in a correct run.
    package var impossibleEvents: [ConnectionStates<Key>.Impossible] { state.withLock { $0.impossible } }

    /// Closes every idle connection; with `forGood`, every connection given back later too, and no
    /// lease is granted any more.
    package func closeAll(forGood: Bool = false) {
        let closing = state.withLock { state in
            Self.take(forGood ? state.machine.shutDown() : state.machine.closeAllIdle(), from: &state)
        }
        for connection in closing { connection.close() }
    }

    /// The TLS context shared by all connections, created on first use.
    package func tlsContext() throws -> TLSContext {
        try tls.withLock { context in
            if let context { return context }
            let created = try TLSContext(options: tlsOptions)
            context = created
            return created
        }
    }

    /// Applies an event to the machine, noting it if impossible; nil then.
    @discardableResult
    fileprivate func report<T>(_ event: (inout ConnectionStates<Key>) throws -> T) -> T? {
        state.withLock { state in
            do {
                return try event(&state.machine)
            } catch {
                // The machine throws nothing else.
                if let impossible = error as? ConnectionStates<Key>.Impossible {
                    state.impossible.append(impossible)
                }
                return nil
            }
        }
    }

    /// The idle connections with `ids` (which the machine has just marked `closing`), out of the cache.
    private static func take(_ ids: [ConnectionStates<Key>.ID], from state: inout State) -> [HTTPConnection] {
        ids.compactMap { state.idle.removeValue(forKey: $0) }
    }
}
