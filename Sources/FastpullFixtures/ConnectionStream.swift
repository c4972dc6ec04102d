/// The byte stream of one accepted connection: plain TCP, or TLS over it. Only the connection's own
/// thread uses it; `stop()` interrupts it from outside by shutting down the socket, which makes a
/// blocked read return 0 and a blocked write fail.
protocol ConnectionStream: AnyObject {
    /// Reads up to `buffer.count` bytes; returns 0 at end of stream or on any error.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int
    /// Writes `bytes`; returns how many were written, which is less than `bytes.count` only on error.
    /// `more` says more bytes follow at once (a hint to coalesce them into fewer packets).
    func write(_ bytes: UnsafeRawBufferPointer, more: Bool) -> Int
    /// Ends the session politely (for TLS, sends close_notify) before the socket is closed.
    func finish()
}

/// Plain TCP: `recv` and `send(MSG_NOSIGNAL)` on the socket.
final class PlainStream: ConnectionStream {
    private let socket: Int32

    init(socket: Int32) {
        self.socket = socket
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        max(0, Syscalls.receive(socket, into: buffer))
    }

    func write(_ bytes: UnsafeRawBufferPointer, more: Bool) -> Int {
        Syscalls.sendAll(socket, bytes, more: more)
    }

    func finish() {}
}
