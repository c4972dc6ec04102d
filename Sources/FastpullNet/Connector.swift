import Glibc

/// Opens connections: resolve, TCP connect (each address in turn), then optionally TLS.
package enum Connector {
    /// Resolves `host` (IPv4 and IPv6; `[::1]` style literals arrive without brackets), tries each
    /// address in order with the connect timeout, sets `TCP_NODELAY`, and, when `tls` is non-nil,
    /// performs the TLS handshake with SNI (not for IP literals) and hostname/IP verification unless
    /// insecure. The handshake's reads and writes each wait at most `timeouts.connect`; afterwards the
    /// idle timeout applies. Blocks the calling thread: call only from a connection thread.
    ///
    /// Errors: `.resolve`; `.connect` or `.timeout("connect")` from the last address tried; TLS errors
    /// from the handshake (not retried on other addresses).
    package static func connect(
        host: String, port: Int, tls: TLSContext?, timeouts: Timeouts, addressing: Addressing = .standard
    ) throws(NetError) -> any Transport {
        let addresses = try Resolver.resolve(host: host, port: port, addressing: addressing)
        let socket = try connectSocket(
            to: addresses, host: host, port: port, timeout: timeouts.connect, from: addressing.local)
        do {
            guard let tls else {
                try socket.setIdleTimeout(timeouts.idle)
                return socket
            }
            try socket.setIdleTimeout(timeouts.connect)
            let transport = try TLSTransport(socket: socket, host: host, context: tls)
            try socket.setIdleTimeout(timeouts.idle)
            return transport
        } catch {
            socket.close()
            throw error
        }
    }

    /// Resolves `host` and connects a plain TCP socket to it, as ``connect(host:port:tls:timeouts:)``
    /// does, but leaves the socket's reads and writes with `timeouts.connect` as their limit: a
    /// handshake follows (a proxy's `CONNECT`, then ``startTLS(on:host:tls:timeouts:)``). Blocks the
    /// calling thread.
    package static func connectSocket(
        host: String, port: Int, timeouts: Timeouts, addressing: Addressing = .standard
    ) throws(NetError) -> Socket {
        let addresses = try Resolver.resolve(host: host, port: port, addressing: addressing)
        let socket = try connectSocket(
            to: addresses, host: host, port: port, timeout: timeouts.connect, from: addressing.local)
        do {
            try socket.setIdleTimeout(timeouts.connect)
        } catch {
            socket.close()
            throw error
        }
        return socket
    }

    /// Performs the TLS handshake with `host` over `socket`, a connection that is already open (e.g. a
    /// tunnel through a proxy): SNI and hostname/IP verification of `host`, not of the socket's peer.
    /// The handshake's reads and writes each wait at most `timeouts.connect`; afterwards the idle
    /// timeout applies. On failure the socket is left open for the caller to close.
    package static func startTLS(
        on socket: Socket, host: String, tls: TLSContext, timeouts: Timeouts
    ) throws(NetError) -> any Transport {
        try socket.setIdleTimeout(timeouts.connect)
        let transport = try TLSTransport(socket: socket, host: host, context: tls)
        try socket.setIdleTimeout(timeouts.idle)
        return transport
    }

    /// Connects to the first of `addresses` that accepts within `timeout`, in order; throws the error of
    /// the last attempt. `host` and `port` name the peer in errors. With `local` (an IP address or a
    /// network interface, ``LocalAddress``), each connection is made from its address of the peer's
    /// family; an address of a family it has none of is skipped.
    package static func connectSocket(
        to addresses: [SocketAddress], host: String, port: Int, timeout: Duration, from local: String? = nil
    ) throws(NetError) -> Socket {
        var lastError = NetError.connect(host: host, port: port, message: "no address to connect to")
        let sources = try local.map { (name) throws(NetError) in try LocalAddress.addresses(for: name) }
        for address in addresses {
            var source: SocketAddress?
            if let local, let sources {
                source = sources.first { $0.family == address.family }
                guard source != nil else {
                    let family = address.family == AF_INET6 ? "IPv6" : "IPv4"
                    lastError = .localAddress(
                        "cannot connect from \(local) to \(NetError.hostAndPort(host, port)): it has no \(family) address"
                    )
                    continue
                }
            }
            do {
                return try Socket.connect(to: address, host: host, port: port, timeout: timeout, from: source)
            } catch {
                lastError = error
            }
        }
        throw lastError
    }
}
