import Glibc
import Synchronization

/// A connected TCP socket in blocking mode, with idle timeouts from `SO_RCVTIMEO`/`SO_SNDTIMEO`.
///
/// Thread safety: `read`, `write` and `close` are meant for the connection's own thread; `shutdown()`
/// may be called from any thread. The descriptor is closed only when no read or write is using it, so
/// a concurrent `shutdown()` or `close()` can never act on a descriptor number that was reused.
package final class Socket: Transport {
    private struct State {
        /// The descriptor, or -1 once closed.
        package var fd: Int32
        /// Set by `shutdown()`: reads and writes fail with `.cancelled` from then on.
        package var isShutDown = false
        /// Set by `close()`; the descriptor is closed when `activeOperations` drops to 0.
        package var isClosed = false
        /// Reads, writes and option changes currently using `fd`.
        package var activeOperations = 0
        /// The `SO_RCVLOWAT` asked for (``setReceiveLowWater(_:)``).
        package var lowWater = 1
        /// Reads and splices that took what had come after ``Socket/lowWaterPatience`` instead.
        package var impatientReads = 0
    }

    private let state: Mutex<State>
    /// `host:port` as the caller named it, for error messages.
    package let peer: String

    private init(fd: Int32, peer: String) {
        self.state = Mutex(State(fd: fd))
        self.peer = peer
    }

    deinit {
        let fd = state.withLock { $0.fd }
        if fd >= 0 { SystemCall.close(fd) }
    }

    /// Opens a TCP connection to `address` within `timeout` (a non-blocking connect and `poll`), from
    /// `source` when given (bound first, port 0), then switches the socket to blocking mode and sets
    /// `TCP_NODELAY`. `host` and `port` name the peer in
    /// errors: `.connect` for a refused or unreachable address, `.timeout("connect")`.
    package static func connect(
        to address: SocketAddress, host: String, port: Int, timeout: Duration,
        from source: SocketAddress? = nil
    ) throws(NetError) -> Socket {
        let fd: Int32
        do {
            fd = try SystemCall.socket(
                family: address.family, type: Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
        } catch {
            throw .system(call: error.call, errno: error.errno)
        }
        let socket = Socket(fd: fd, peer: NetError.hostAndPort(host, port))
        func refused(_ code: Int32) -> NetError {
            .connect(host: host, port: port, message: NetError.errnoText(code))
        }
        if let source {
            // Bound before it connects: the connection comes from this address (`--interface`).
            do {
                try source.withSockAddr { (pointer, length) throws(SystemCallError) in
                    try SystemCall.bind(fd, to: pointer, length: length)
                }
            } catch {
                throw .localAddress(
                    "cannot connect from \(source.numericHost) to \(NetError.hostAndPort(host, port)): \(NetError.errnoText(error.errno))"
                )
            }
        }
        do {
            try address.withSockAddr { (pointer, length) throws(SystemCallError) in
                try SystemCall.connect(fd, to: pointer, length: length)
            }
        } catch  where error.errno == EINPROGRESS || error.errno == EINTR {
            let events: Int16
            do {
                events = try SystemCall.poll(fd, events: Int16(POLLOUT), timeout: timeout)
            } catch {
                throw .system(call: error.call, errno: error.errno)
            }
            guard events != 0 else { throw .timeout("connect") }
            let pending: Int32
            do {
                pending = try SystemCall.getOption(fd, level: SOL_SOCKET, name: SO_ERROR)
            } catch {
                throw .system(call: error.call, errno: error.errno)
            }
            guard pending == 0 else { throw refused(pending) }
        } catch {
            throw refused(error.errno)
        }
        do {
            try SystemCall.setNonBlocking(fd, false)
            try SystemCall.setOption(fd, level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: Int32(1))
        } catch {
            throw .system(call: error.call, errno: error.errno)
        }
        return socket
    }

    /// Sets how long one read or write may wait without progress before it throws `.timeout`.
    package func setIdleTimeout(_ timeout: Duration) throws(NetError) {
        let fd = try beginOperation()
        defer { endOperation() }
        let value = Timeouts.timeval(timeout)
        do {
            try SystemCall.setOption(fd, level: SOL_SOCKET, name: SO_RCVTIMEO, value: value)
            try SystemCall.setOption(fd, level: SOL_SOCKET, name: SO_SNDTIMEO, value: value)
        } catch {
            throw .system(call: error.call, errno: error.errno)
        }
    }

    package func setReceiveLowWater(_ bytes: Int) {
        guard let fd = try? beginOperation() else { return }
        defer { endOperation() }
        let mark = max(bytes, 1)
        state.withLock { $0.lowWater = mark }
        // A socket that refuses it only wakes its reader more often.
        try? SystemCall.setOption(fd, level: SOL_SOCKET, name: SO_RCVLOWAT, value: Int32(clamping: mark))
    }

    /// How long a read waits for the low-water mark before it takes whatever has come. The kernel
    /// wakes a reader at the mark only as bytes arrive, and a connection whose bytes stopped short of
    /// it (its socket's receive memory full of fewer bytes on loopback, so the sender waits for the
    /// reader) would otherwise wait for the idle timeout: ordered output, read through memory, waited
    /// 10 s at a time. 40 ms: the mark is 10 ms of the answer's rate.
    package static let lowWaterPatience: Duration = .milliseconds(40)

    /// Reads and splices that took what had come after ``lowWaterPatience`` instead of the mark.
    package var impatientReads: Int { state.withLock { $0.impatientReads } }

    /// Before a read or splice of `fd` with a mark above one byte: waits in `poll` for the mark (it
    /// also wakes at the end of the stream, on an error, and when the socket's receive memory is
    /// nearly full of fewer bytes), at most ``lowWaterPatience``. Returns the mark and whether the
    /// socket became readable, or nil when the mark is one byte (the call then blocks as usual).
    private func awaitLowWater(_ fd: Int32) throws(NetError) -> (mark: Int, readable: Bool)? {
        let mark = state.withLock { $0.lowWater }
        guard mark > 1 else { return nil }
        let events: Int16
        do {
            events = try SystemCall.poll(fd, events: Int16(POLLIN), timeout: Self.lowWaterPatience)
        } catch {
            throw failure(error, during: "read")
        }
        if events == 0 { state.withLock { $0.impatientReads += 1 } }
        return (mark, events != 0)
    }

    /// Runs `call` with the mark lowered to one byte (it then takes what is there, or waits for any
    /// byte), and puts `mark` back after it.
    private func withMarkLowered<Result>(
        _ fd: Int32, _ mark: Int, _ call: () throws(NetError) -> Result
    ) throws(NetError) -> Result {
        try? SystemCall.setOption(fd, level: SOL_SOCKET, name: SO_RCVLOWAT, value: Int32(1))
        defer {
            try? SystemCall.setOption(fd, level: SOL_SOCKET, name: SO_RCVLOWAT, value: Int32(clamping: mark))
        }
        return try call()
    }

    /// The `SO_RCVLOWAT` in force (for tests); nil when it cannot be read.
    package var receiveLowWater: Int? {
        guard let fd = try? beginOperation() else { return nil }
        defer { endOperation() }
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &value, &length) == 0 else { return nil }
        return Int(value)
    }

    /// True once `shutdown()` was called.
    package var isShutDown: Bool { state.withLock { $0.isShutDown } }

    /// One `recv`: returns what is available (up to `buffer.count` bytes), 0 at end of stream. With a
    /// low-water mark above one byte, the wait for it is bounded (``awaitLowWater(_:)``), and the
    /// read itself never waits in `recv` for the mark: a `recv` that blocks until the mark, with
    /// fewer bytes queued and the sender waiting for room, ends only at the idle timeout.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(NetError) -> Int {
        guard buffer.count > 0 else { return 0 }
        let fd = try beginOperation()
        defer { endOperation() }
        if let (mark, _) = try awaitLowWater(fd) {
            if let count = try receiveAvailable(fd, into: buffer) { return count }
            // Nothing has come at all: wait for any byte.
            return try withMarkLowered(fd, mark) { () throws(NetError) in try receive(fd, into: buffer) }
        }
        return try receive(fd, into: buffer)
    }

    /// A blocking `recv`.
    private func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(NetError) -> Int {
        let count: Int
        do {
            count = try SystemCall.recv(fd, into: buffer)
        } catch {
            throw failure(error, during: "read")
        }
        // After shutdown() the kernel reports end of stream; that must not look like the peer's EOF.
        if count == 0 && isShutDown { throw .cancelled }
        return count
    }

    /// A `recv` that never waits: nil when nothing has arrived.
    private func receiveAvailable(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(NetError)
        -> Int?
    {
        let count: Int
        do {
            count = try SystemCall.recv(fd, into: buffer, flags: Int32(MSG_DONTWAIT))
        } catch  where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
            return nil
        } catch {
            throw failure(error, during: "read")
        }
        if count == 0 && isShutDown { throw .cancelled }
        return count
    }

    /// One `recv` that never waits: what is in the socket now (up to `buffer.count` bytes), 0 at end
    /// of stream, nil when nothing has arrived.
    package func readAvailable(into buffer: UnsafeMutableRawBufferPointer) throws(NetError) -> Int? {
        guard buffer.count > 0 else { return 0 }
        let fd = try beginOperation()
        defer { endOperation() }
        return try receiveAvailable(fd, into: buffer)
    }

    package var canSplice: Bool { true }

    /// One `splice` from the socket into `pipe`: moves what is available (up to `count` bytes), 0 at
    /// end of stream. Waits like `read`, with the same idle timeout.
    package func splice(into pipe: Int32, count: Int) throws(NetError) -> Int {
        guard count > 0 else { return 0 }
        let fd = try beginOperation()
        defer { endOperation() }
        func move() throws(NetError) -> Int {
            let moved: Int
            do {
                moved = try SystemCall.splice(fd, intoPipe: pipe, count: count)
            } catch {
                throw failure(error, during: "read")
            }
            if moved == 0 && isShutDown { throw .cancelled }
            return moved
        }
        // A splice moves what is queued without waiting for the mark; it waits (for the mark) only
        // when nothing is queued, so after the patience ran out it waits with the mark lowered.
        guard let (mark, readable) = try awaitLowWater(fd), !readable else { return try move() }
        return try withMarkLowered(fd, mark, move)
    }

    /// Whether the peer closed or sent something since the last read: `poll` without waiting, then a
    /// peek that consumes nothing.
    package func idleState() -> IdleState {
        guard let fd = try? beginOperation() else { return .closed }
        defer { endOperation() }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&descriptor, 1, 0) > 0 else { return .quiet }
        var byte: UInt8 = 0
        let peeked = Glibc.recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
        if peeked > 0 { return .unexpectedData }
        if peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return .quiet }
        return .closed
    }

    /// Sends all of `bytes` (`MSG_NOSIGNAL`: a closed peer gives `.reset`, never `SIGPIPE`).
    package func write(_ bytes: UnsafeRawBufferPointer) throws(NetError) {
        let fd = try beginOperation()
        defer { endOperation() }
        var offset = 0
        while offset < bytes.count {
            do {
                let remaining = UnsafeRawBufferPointer(rebasing: bytes[offset...])
                offset += try SystemCall.send(fd, remaining, flags: Int32(MSG_NOSIGNAL))
            } catch {
                throw failure(error, during: "write")
            }
        }
    }

    /// Shuts down both directions (`SHUT_RDWR`): blocked reads and writes return at once, and later ones
    /// throw `.cancelled`. Safe from any thread, any number of times, before or after `close()`.
    package func shutdown() {
        state.withLock { state in
            state.isShutDown = true
            if state.fd >= 0 { try? SystemCall.shutdown(state.fd, how: Int32(SHUT_RDWR)) }
        }
    }

    /// Closes the descriptor once no read or write uses it (waking any that do). Idempotent.
    package func close() {
        let fd = state.withLock { state -> Int32 in
            guard !state.isClosed else { return -1 }
            state.isClosed = true
            if state.activeOperations > 0 {
                if state.fd >= 0 { try? SystemCall.shutdown(state.fd, how: Int32(SHUT_RDWR)) }
                return -1
            }
            defer { state.fd = -1 }
            return state.fd
        }
        if fd >= 0 { SystemCall.close(fd) }
    }

    /// Registers a use of the descriptor; fails with `.cancelled` after `shutdown()` or `close()`.
    private func beginOperation() throws(NetError) -> Int32 {
        try state.withLock { (state) throws(NetError) -> Int32 in
            guard !state.isShutDown, !state.isClosed, state.fd >= 0 else { throw .cancelled }
            state.activeOperations += 1
            return state.fd
        }
    }

    /// Ends a use of the descriptor, closing it if `close()` came meanwhile.
    private func endOperation() {
        let fd = state.withLock { state -> Int32 in
            state.activeOperations -= 1
            guard state.isClosed, state.activeOperations == 0, state.fd >= 0 else { return -1 }
            defer { state.fd = -1 }
            return state.fd
        }
        if fd >= 0 { SystemCall.close(fd) }
    }

    /// Maps a failed `recv`/`send` to the error the caller sees.
    private func failure(_ error: SystemCallError, during operation: String) -> NetError {
        if isShutDown { return .cancelled }
        switch error.errno {
        case EAGAIN, EWOULDBLOCK, ETIMEDOUT:
            return .timeout(operation)
        case ECONNRESET:
            return .reset("connection reset by \(peer) during \(operation)")
        case EPIPE, ENOTCONN:
            return .reset("\(peer) closed the connection during \(operation)")
        default:
            return .system(call: error.call, errno: error.errno)
        }
    }
}
