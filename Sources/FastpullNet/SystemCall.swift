import CLinux
import Glibc

/// A failed system call: the call's name and the `errno` it set.
package struct SystemCallError: Error, Sendable, Equatable {
    /// The name of the system call, e.g. "recv".
    package var call: String
    /// The `errno` value the call failed with.
    package var errno: Int32
}

/// Thin wrappers over the socket system calls, one per call, in the style of swift-system: each
/// retries on `EINTR` where retrying is correct and throws ``SystemCallError`` instead of returning -1.
package enum SystemCall {
    /// `socket(2)`; the descriptor is close-on-exec. Fails with `EMFILE` where the socket would take
    /// the process's last descriptor (``DescriptorBudget/leavesOneFree``).
    package static func socket(family: Int32, type: Int32) throws(SystemCallError) -> Int32 {
        guard DescriptorBudget.leavesOneFree else { throw SystemCallError(call: "socket", errno: EMFILE) }
        return try retrying("socket") { Glibc.socket(family, type | Int32(SOCK_CLOEXEC.rawValue), 0) }
    }

    /// `connect(2)`. Not retried: after `EINTR` the connection continues in the background, so callers
    /// of a non-blocking connect treat `EINTR` like `EINPROGRESS`.
    package static func connect(
        _ fd: Int32, to address: UnsafePointer<sockaddr>, length: socklen_t
    ) throws(SystemCallError) {
        guard Glibc.connect(fd, address, length) == 0 else {
            throw SystemCallError(call: "connect", errno: errno)
        }
    }

    /// `bind(2)`.
    package static func bind(
        _ fd: Int32, to address: UnsafePointer<sockaddr>, length: socklen_t
    ) throws(SystemCallError) {
        guard Glibc.bind(fd, address, length) == 0 else {
            throw SystemCallError(call: "bind", errno: errno)
        }
    }

    /// `poll(2)` on one descriptor; returns the reported events, or 0 when `timeout` passed first.
    /// `EINTR` restarts the wait with the time that is left.
    package static func poll(_ fd: Int32, events: Int16, timeout: Duration) throws(SystemCallError) -> Int16 {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var descriptor = pollfd(fd: fd, events: events, revents: 0)
        while true {
            let left = max(clock.now.duration(to: deadline), .zero)
            let result = Glibc.poll(&descriptor, 1, Timeouts.milliseconds(left))
            if result > 0 { return descriptor.revents }
            if result == 0 { return 0 }
            guard errno == EINTR else { throw SystemCallError(call: "poll", errno: errno) }
        }
    }

    /// `recv(2)` into `buffer`; returns the number of bytes received, 0 at end of stream.
    package static func recv(
        _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, flags: Int32 = 0
    ) throws(SystemCallError) -> Int {
        try retrying("recv") { Glibc.recv(fd, buffer.baseAddress, buffer.count, flags) }
    }

    /// `splice(2)` of up to `count` bytes from the socket `fd` into the pipe `pipe`; returns the number
    /// moved, 0 at end of stream.
    package static func splice(_ fd: Int32, intoPipe pipe: Int32, count: Int) throws(SystemCallError) -> Int {
        try retrying("splice") { fp_splice(fd, pipe, nil, count) }
    }

    /// `send(2)` of `bytes`; returns the number of bytes sent, which may be fewer than `bytes.count`.
    package static func send(
        _ fd: Int32, _ bytes: UnsafeRawBufferPointer, flags: Int32
    ) throws(SystemCallError) -> Int {
        try retrying("send") { Glibc.send(fd, bytes.baseAddress, bytes.count, flags) }
    }

    /// `setsockopt(2)` with a value of any plain type (`Int32`, `timeval`, ...).
    package static func setOption<Value>(
        _ fd: Int32, level: Int32, name: Int32, value: Value
    ) throws(SystemCallError) {
        var value = value
        let result = withUnsafeBytes(of: &value) { bytes in
            Glibc.setsockopt(fd, level, name, bytes.baseAddress, socklen_t(bytes.count))
        }
        guard result == 0 else { throw SystemCallError(call: "setsockopt", errno: errno) }
    }

    /// `getsockopt(2)` of an `Int32` option such as `SO_ERROR`.
    package static func getOption(_ fd: Int32, level: Int32, name: Int32) throws(SystemCallError) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard Glibc.getsockopt(fd, level, name, &value, &length) == 0 else {
            throw SystemCallError(call: "getsockopt", errno: errno)
        }
        return value
    }

    /// Sets or clears `O_NONBLOCK` with `fcntl(2)`.
    package static func setNonBlocking(_ fd: Int32, _ nonBlocking: Bool) throws(SystemCallError) {
        let flags = try retrying("fcntl") { Glibc.fcntl(fd, F_GETFL) }
        let wanted = nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if wanted != flags {
            _ = try retrying("fcntl") { Glibc.fcntl(fd, F_SETFL, wanted) }
        }
    }

    /// `shutdown(2)`; `how` is `SHUT_RD`, `SHUT_WR` or `SHUT_RDWR`.
    package static func shutdown(_ fd: Int32, how: Int32) throws(SystemCallError) {
        guard Glibc.shutdown(fd, how) == 0 else { throw SystemCallError(call: "shutdown", errno: errno) }
    }

    /// `close(2)`. Never retried: on Linux the descriptor is released even when `close` reports `EINTR`,
    /// and retrying could close a descriptor another thread has just been given.
    package static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Calls `body`, a system call that returns -1 and sets `errno` on failure, again while it fails
    /// with `EINTR`; returns what it last returned, `errno` set where that is -1. For the calls whose
    /// callers read `errno` themselves (the file system's, which report a path with it).
    package static func restarting<Result: BinaryInteger>(_ body: () -> Result) -> Result {
        while true {
            let result = body()
            if result != -1 || errno != EINTR { return result }
        }
    }

    /// Calls `body` until it returns something other than -1 with `EINTR`; throws on any other -1.
    private static func retrying<Result: BinaryInteger>(
        _ call: String, _ body: () -> Result
    ) throws(SystemCallError) -> Result {
        while true {
            let result = body()
            if result != -1 { return result }
            guard errno == EINTR else { throw SystemCallError(call: call, errno: errno) }
        }
    }
}
