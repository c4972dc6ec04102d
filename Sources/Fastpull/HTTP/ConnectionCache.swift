/// Kept-alive connections and the TLS context, by origin and proxy. One download has its own; the
/// files of a batch share one, so that a file after the first reuses a connection (no TCP or TLS
/// handshake) and the CA store is loaded once, not once per file.
///
/// Connections are interchangeable only with the same origin over the same route, and only between
/// downloads whose connections are alike (the same TLS options and timeouts, no rate limit pacing
/// them: ``ConnectionPool`` checks).
final class ConnectionCache: Sendable {
    struct Key: Hashable {
        var origin: Origin
        var proxy: Proxy?
    }

    let tlsOptions: TLSOptions
    let timeouts: Timeouts
    private let idle = PlainMutex<[Key: [HTTPConnection]]>([:])
    private let tls = PlainMutex<TLSContext?>(nil)

    /// Idle connections kept per origin; more are closed as they come back.
    static let idleLimit = 64

    init(tlsOptions: TLSOptions, timeouts: Timeouts) {
        self.tlsOptions = tlsOptions
        self.timeouts = timeouts
    }

    /// The most recently used idle connection for `key`, if any (it may have gone bad meanwhile).
    func take(_ key: Key) -> HTTPConnection? {
        idle.withLock { $0[key]?.popLast() }
    }

    /// Keeps `connection` for reuse, or closes it when enough are kept already.
    func keep(_ connection: HTTPConnection, as key: Key) {
        let kept = idle.withLock { idle in
            guard idle[key, default: []].count < Self.idleLimit else { return false }
            idle[key, default: []].append(connection)
            return true
        }
        if !kept { connection.close() }
    }

    /// Closes every idle connection.
    func closeAll() {
        let all = idle.withLock { pool in
            defer { pool.removeAll() }
            return pool.values.flatMap { $0 }
        }
        for connection in all { connection.close() }
    }

    /// The TLS context shared by all connections, created on first use.
    func tlsContext() throws -> TLSContext {
        try tls.withLock { context in
            if let context { return context }
            let created = try TLSContext(options: tlsOptions)
            context = created
            return created
        }
    }
}
