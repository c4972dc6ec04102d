import FastpullNet
import FoundationEssentials
import Synchronization

/// Paces the bytes every connection of one download receives to ``bytesPerSecond`` in total — and,
/// with a ``parent``, every connection of every download under it too (a client's overall limit): a
/// read waits for the later of its two bookings.
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
    private let rate: Atomic<Int64>
    /// The limit every download under it shares, if any.
    package let parent: RateLimiter?
    /// How far a booking may run ahead of the rate: the largest burst.
    package static let tolerance: Duration = .milliseconds(20)
    /// When the next byte is due, or nil before the first read.
    private let nextDue = Mutex<ContinuousClock.Instant?>(nil)

    /// A limit of `bytesPerSecond` (0: none, until ``setRate(_:)``), under `parent` when given.
    package init(bytesPerSecond: Int64, parent: RateLimiter? = nil) {
        precondition(bytesPerSecond >= 0)
        rate = Atomic(bytesPerSecond)
        self.parent = parent
    }

    /// The limit, in bytes per second (0: none).
    package var bytesPerSecond: Int64 { rate.load(ordering: .relaxed) }

    /// Changes the limit for the reads from now on (0: none).
    package func setRate(_ bytesPerSecond: Int64) {
        rate.store(max(bytesPerSecond, 0), ordering: .relaxed)
    }

    /// The most bytes one read may take at once: 1/50 s worth of the lowest rate that applies.
    package var sliceBytes: Int {
        let own = bytesPerSecond
        let slice =
            own > 0
            ? Int(min(max(own / 50, 256), Int64(HTTPConnection.bufferSize))) : HTTPConnection.bufferSize
        return min(slice, parent?.sliceBytes ?? slice)
    }

    /// Books `count` received bytes at `now` (here and in the parent) and returns when the caller
    /// may go on.
    package func book(_ count: Int, now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        due(count, now: now) ?? now
    }

    /// When `count` bytes booked at `now` are due under this limit and its parent's; nil where
    /// neither limits.
    private func due(_ count: Int, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        let inherited = parent?.due(count, now: now)
        let own = bytesPerSecond
        guard own > 0 else { return inherited }
        let cost = Duration.nanoseconds(Int64(count) * 1_000_000_000 / own)
        let mine = nextDue.withLock { due in
            let start = max(due ?? now, now)
            let end = start + cost
            due = end
            return end - Self.tolerance
        }
        return max(mine, inherited ?? mine)
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
