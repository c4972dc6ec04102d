import Glibc

/// A connected, blocking byte stream (plain TCP or TLS).
///
/// Call `read`/`write`/`close` from ONE thread (the connection's own thread). `shutdown()` may be
/// called from any thread (e.g. a cancellation handler) and makes a blocked read or write return
/// promptly: the read throws ``NetError/cancelled`` (or returns 0).
package protocol Transport: AnyObject, Sendable {
    /// Reads up to `buffer.count` bytes; returns 0 at orderly EOF (and for an empty buffer); throws
    /// `NetError.timeout("read")` after the idle timeout with no byte.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// Writes all bytes or throws.
    func write(_ bytes: UnsafeRawBufferPointer) throws
    /// Wakes blocked reads and writes and makes later ones throw ``NetError/cancelled``. Thread-safe.
    func shutdown()
    /// Releases the connection. Idempotent.
    func close()
    /// Whether ``splice(into:count:)`` works: true for a plain TCP socket, false for TLS or pacing.
    var canSplice: Bool { get }
    /// Moves up to `count` received bytes straight into the pipe `pipe` (`splice(2)`), never through
    /// user memory; returns 0 at orderly EOF. Errors and the idle timeout are those of `read`.
    func splice(into pipe: Int32, count: Int) throws -> Int
    /// What a connection with no request out has received, without waiting or consuming anything: a
    /// kept-alive connection the server has closed (or reset) is not worth a request.
    func idleState() -> IdleState
    /// Sets how many received bytes wake a blocked read (`SO_RCVLOWAT`): the kernel then gathers what
    /// a trickling link delivers instead of waking the reader for every few packets. Never more than
    /// the peer will still send, or the read waits for its timeout. Transports that cannot, ignore it;
    /// so does TLS, where OpenSSL reads ahead: the socket may hold less of a body than is still to
    /// come, and a mark sized from the rest held the last read of a window until the stall timeout.
    func setReceiveLowWater(_ bytes: Int)
}

/// What an idle connection has received since its last response.
package enum IdleState: Sendable, Equatable {
    /// Nothing: it is as it was.
    case quiet
    /// The peer closed or reset it.
    case closed
    /// Bytes no request asked for (for TLS, possibly a session ticket).
    case unexpectedData
}

extension Transport {
    package var canSplice: Bool { false }

    package func idleState() -> IdleState { .quiet }

    package func setReceiveLowWater(_ bytes: Int) {}

    package func splice(into pipe: Int32, count: Int) throws -> Int {
        throw NetError.system(call: "splice", errno: EINVAL)
    }
}
