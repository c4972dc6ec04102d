import Synchronization

/// Idle keep-alive connections of one download, by origin, and the factory that opens new ones.
///
/// A connection taken from the pool belongs to the taker alone until it is given back.
final class ConnectionPool: Sendable {
    private let idle = Mutex<[Origin: [HTTPConnection]]>([:])
    private let tls = Mutex<TLSContext?>(nil)
    let tlsOptions: TLSOptions
    let timeouts: Timeouts

    init(tlsOptions: TLSOptions, timeouts: Timeouts) {
        self.tlsOptions = tlsOptions
        self.timeouts = timeouts
    }

    /// An idle connection to `origin`, or a new one. Blocks: call from a connection thread.
    func connection(to origin: Origin) throws -> HTTPConnection {
        if let reused = idle.withLock({ $0[origin]?.popLast() }) { return reused }
        let context = origin.secure ? try tlsContext() : nil
        let transport = try Connector.connect(
            host: origin.host, port: origin.port, tls: context, timeouts: timeouts)
        return HTTPConnection(origin: origin, transport: transport)
    }

    /// Takes a connection back for reuse if its last response allows it; closes it otherwise.
    func giveBack(_ connection: HTTPConnection) {
        guard connection.isReusable else {
            connection.close()
            return
        }
        idle.withLock { $0[connection.origin, default: []].append(connection) }
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
