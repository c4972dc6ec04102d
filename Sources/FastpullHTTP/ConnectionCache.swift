import FastpullNet
import FoundationEssentials

/// Kept-alive connections and the TLS context, by origin and proxy, for connections alike (the same
/// TLS options and timeouts). A ``FastpullClient`` holds one per kind of connection, so that a file
/// after the first (in a batch, or a later download through the same client) reuses a connection (no
/// TCP or TLS handshake) and the CA store is loaded once.
///
/// Connections are interchangeable only with the same origin over the same route, and only between
/// downloads whose connections are alike (no rate limit pacing them: ``ConnectionPool`` checks).
///
/// At most ``idleLimit`` wait in all (the oldest goes first), none longer than ``idleLifetime``, and
/// none after ``closeAll()``: a client kept for days holds a bounded number of descriptors.
package final class ConnectionCache: Sendable {
    package struct Key: Hashable {
        package var origin: Origin
        package var proxy: Proxy?
    }

    private struct Idle {
        package var connection: HTTPConnection
        package var key: Key
        package var since: ContinuousClock.Instant
    }

    private struct State {
        /// Oldest first.
        package var idle: [Idle] = []
        package var closed = false
    }

    package let tlsOptions: TLSOptions
    package let timeouts: Timeouts
    private let state = PlainMutex(State())
    private let tls = PlainMutex<TLSContext?>(nil)

    /// Idle connections kept in all; more close the oldest.
    package static let idleLimit = 64
    /// How long a connection may wait unused before it is closed: under most servers' keep-alive
    /// timeouts (nginx 75 s, h2o 10 s, apache 5 s; a connection the server has closed meanwhile costs
    /// one reconnect, see ``ConnectionPool/exchange``).
    package static let idleLifetime: Duration = .seconds(60)

    package init(tlsOptions: TLSOptions, timeouts: Timeouts) {
        self.tlsOptions = tlsOptions
        self.timeouts = timeouts
    }

    /// The most recently used idle connection for `key`, if any (it may have gone bad meanwhile).
    package func take(_ key: Key) -> HTTPConnection? {
        let (taken, expired) = state.withLock { state -> (HTTPConnection?, [HTTPConnection]) in
            let expired = Self.removeExpired(&state.idle)
            guard let index = state.idle.lastIndex(where: { $0.key == key }) else { return (nil, expired) }
            return (state.idle.remove(at: index).connection, expired)
        }
        for connection in expired { connection.close() }
        return taken
    }

    /// Keeps `connection` for reuse (closing the oldest when ``idleLimit`` are kept), or closes it
    /// once ``closeAll()`` has run.
    package func keep(_ connection: HTTPConnection, as key: Key) {
        let closing = state.withLock { state -> [HTTPConnection] in
            guard !state.closed else { return [connection] }
            var closing = Self.removeExpired(&state.idle)
            state.idle.append(Idle(connection: connection, key: key, since: .now))
            if state.idle.count > Self.idleLimit { closing.append(state.idle.removeFirst().connection) }
            return closing
        }
        for connection in closing { connection.close() }
    }

    /// How many connections wait idle now.
    package var idleCount: Int { state.withLock { $0.idle.count } }

    /// Closes every idle connection; with `forGood`, every connection given back later too.
    package func closeAll(forGood: Bool = false) {
        let all = state.withLock { state in
            if forGood { state.closed = true }
            defer { state.idle.removeAll() }
            return state.idle.map(\.connection)
        }
        for connection in all { connection.close() }
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

    /// Removes and returns the connections idle longer than ``idleLifetime`` (they are oldest first).
    private static func removeExpired(_ idle: inout [Idle]) -> [HTTPConnection] {
        let cutoff = ContinuousClock.now - idleLifetime
        guard let fresh = idle.firstIndex(where: { $0.since >= cutoff }) else {
            defer { idle.removeAll() }
            return idle.map(\.connection)
        }
        guard fresh > 0 else { return [] }
        defer { idle.removeFirst(fresh) }
        return idle[..<fresh].map(\.connection)
    }
}
