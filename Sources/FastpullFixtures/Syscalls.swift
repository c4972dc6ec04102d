#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Thin wrappers over the socket calls the fixture server makes. Each loops on `EINTR` and reports
/// failure in-band: the server treats every socket error as "this connection is over".
enum Syscalls {
    /// The current `errno` as a message, e.g. "Connection refused (errno 111)".
    static func describeErrno(_ code: Int32 = errno) -> String {
        "\(String(cString: strerror(code))) (errno \(code))"
    }

    /// Nanoseconds on the monotonic clock.
    static func monotonicNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// `recv` into `buffer`; returns the byte count, 0 at end of stream, -1 on error.
    static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            return count
        }
    }

    /// Whether bytes wait to be read on `fd` (a peek that does not block or take them).
    static func hasBytesWaiting(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        while true {
            let count = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
            if count < 0 && errno == EINTR { continue }
            return count > 0
        }
    }

    /// Sends every byte of `bytes` with `MSG_NOSIGNAL` (plus `MSG_MORE` when `more`); returns how many
    /// bytes the kernel accepted, which is less than `bytes.count` only on error.
    static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, more: Bool) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        #if canImport(Glibc)
            let flags = Int32(MSG_NOSIGNAL) | (more ? Int32(MSG_MORE) : 0)
        #else
            let flags: Int32 = 0
        #endif
        var sent = 0
        while sent < bytes.count {
            let count = send(fd, base + sent, bytes.count - sent, flags)
            if count < 0 {
                if errno == EINTR { continue }
                return sent
            }
            sent += count
        }
        return sent
    }

    /// `pread` until `buffer` is full; false on error or if the file ends first.
    static func readFully(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Bool {
        guard let base = buffer.baseAddress else { return true }
        var done = 0
        while done < buffer.count {
            let count = pread(fd, base + done, buffer.count - done, off_t(offset) + off_t(done))
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return false }
            done += count
        }
        return true
    }

    /// Sets an integer socket option, ignoring failure (every option here is an optimisation).
    static func setOption(_ fd: Int32, level: Int32, name: Int32, value: Int32) {
        var value = value
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Polls `fds` for readability; `timeout` nil waits forever, other timeouts are rounded up to whole
    /// milliseconds (`ppoll` is not visible from Swift's Glibc module). Returns the `poll` result after
    /// `EINTR` retries (a retry restarts the full timeout, which only lengthens a wait that the stop pipe
    /// interrupts anyway).
    static func pollReadable(_ fds: inout [pollfd], timeoutNanoseconds timeout: Int64?) -> Int32 {
        for index in fds.indices {
            fds[index].events = Int16(POLLIN)
            fds[index].revents = 0
        }
        let milliseconds = timeout.map { Int32(clamping: ($0 + 999_999) / 1_000_000) } ?? -1
        while true {
            let result = poll(&fds, nfds_t(fds.count), milliseconds)
            if result < 0 && errno == EINTR { continue }
            return result
        }
    }
}
