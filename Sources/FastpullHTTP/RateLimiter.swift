import FastpullNet
import FoundationEssentials
import Synchronization

/// Paces the bytes every connection of one download receives to ``bytesPerSecond`` in total.
///
/// It is a virtual schedule (the generic cell rate algorithm): each read books its bytes in a shared
/// timeline that advances by `count / rate`, and the reading connection waits until its booking is
/// due. Bookings are served in order, so connections share the rate fairly; reads are capped at
/// ``sliceBytes`` (1/50 s worth of the rate), so the flow is smooth rather than bursty; and idle time
/// is not saved up beyond ``tolerance``, so there is no burst after a pause.
///
/// Pacing the reads, not the file writes, slows the sender too: the kernel's receive window fills and
/// TCP flow control holds the server back, as curl's `--limit-rate` does. The wait blocks the
/// connection's own thread (in steps of at most 10 ms, so cancellation is prompt), never the
/// cooperative pool.
package final class RateLimiter: Sendable {
    /// The limit, in bytes per second.
    package let bytesPerSecond: Int64
    /// The most bytes one read may take at once.
    package let sliceBytes: Int
    /// How far a booking may run ahead of the rate: the largest burst.
    package static let tolerance: Duration = .milliseconds(20)
    /// When the next byte is due, or nil before the first read.
    private let nextDue = Mutex<ContinuousClock.Instant?>(nil)

    package init(bytesPerSecond: Int64) {
        precondition(bytesPerSecond > 0)
        self.bytesPerSecond = bytesPerSecond
        self.sliceBytes = Int(min(max(bytesPerSecond / 50, 256), Int64(HTTPConnection.bufferSize)))
    }

    /// Books `count` received bytes at `now` and returns when the caller may go on.
    package func book(_ count: Int, now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        let cost = Duration.nanoseconds(Int64(count) * 1_000_000_000 / bytesPerSecond)
        return nextDue.withLock { due in
            let start = max(due ?? now, now)
            let end = start + cost
            due = end
            return end - Self.tolerance
        }
    }

    /// Books `count` received bytes and waits until they are due. Throws `.cancelled` as soon as
    /// `isCancelled` says so.
    package func pace(_ count: Int, isCancelled: () -> Bool) throws(NetError) {
        let due = book(count, now: .now)
        while true {
            let now = ContinuousClock.now
            if now >= due { return }
            if isCancelled() { throw .cancelled }
            OSThread.sleep(seconds: min((due - now).seconds, 0.01))
        }
    }
}

extension RateLimiter {
    /// A transport whose reads are paced by a ``RateLimiter``; writes (request heads) pass straight.
    package final class PacedTransport: Transport {
        package let inner: any Transport
        package let limiter: RateLimiter
        private let isShutDown = Atomic<Bool>(false)

        package init(_ inner: any Transport, limiter: RateLimiter) {
            self.inner = inner
            self.limiter = limiter
        }

        package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            let slice =
                buffer.count > limiter.sliceBytes
                ? UnsafeMutableRawBufferPointer(rebasing: buffer[0..<limiter.sliceBytes]) : buffer
            let count = try inner.read(into: slice)
            if count > 0 {
                try limiter.pace(count) { isShutDown.load(ordering: .relaxed) }
            }
            return count
        }

        package func write(_ bytes: UnsafeRawBufferPointer) throws {
            try inner.write(bytes)
        }

        package func idleState() -> IdleState { inner.idleState() }

        package func shutdown() {
            isShutDown.store(true, ordering: .relaxed)
            inner.shutdown()
        }

        package func close() {
            isShutDown.store(true, ordering: .relaxed)
            inner.close()
        }
    }
}
