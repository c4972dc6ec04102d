import Glibc

/// Time limits for one connection.
package struct Timeouts: Sendable, Hashable {
    /// How long to wait for a TCP connection to one address, and for each step of the TLS handshake.
    package var connect: Duration = .seconds(15)
    /// How long a read or write may wait without transferring a byte.
    package var idle: Duration = .seconds(30)

    package init(connect: Duration = .seconds(15), idle: Duration = .seconds(30)) {
        self.connect = connect
        self.idle = idle
    }
}

extension Timeouts {
    /// `duration` in whole milliseconds for `poll(2)`, rounded up so a short positive wait never becomes
    /// 0 (which would mean "do not wait"), and clamped to `Int32.max`.
    package static func milliseconds(_ duration: Duration) -> Int32 {
        guard duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        guard seconds < Int64(Int32.max) / 1000 else { return Int32.max }
        let millis = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: seconds * 1000 + millis)
    }

    /// `duration` as a `timeval` for `SO_RCVTIMEO`/`SO_SNDTIMEO`. A zero `timeval` means "no timeout"
    /// to the kernel, so non-positive durations become the smallest positive one (1 µs).
    package static func timeval(_ duration: Duration) -> Glibc.timeval {
        guard duration > .zero else { return Glibc.timeval(tv_sec: 0, tv_usec: 1) }
        let (seconds, attoseconds) = duration.components
        let micros = (attoseconds + 999_999_999_999) / 1_000_000_000_000
        if micros >= 1_000_000 {
            return Glibc.timeval(
                tv_sec: Int(clamping: seconds < Int64.max ? seconds + 1 : seconds), tv_usec: 0)
        }
        return Glibc.timeval(tv_sec: Int(clamping: seconds), tv_usec: Int(micros))
    }
}
