import Glibc

/// A mutex with a condition variable whose timed waits run on the monotonic clock (a change of the
/// wall clock neither ends nor stretches them).
///
/// `@unchecked Sendable`: the pthread objects are made for use from many threads; what a caller
/// guards with ``lock()`` is its own to keep consistent.
package final class Condition: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    package init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    package func lock() { pthread_mutex_lock(mutex) }
    package func unlock() { pthread_mutex_unlock(mutex) }
    /// Wakes one waiter (call with the lock held).
    package func signal() { pthread_cond_signal(condition) }
    /// Wakes every waiter (call with the lock held).
    package func broadcast() { pthread_cond_broadcast(condition) }

    /// Waits for a signal (call with the lock held; it is held again on return). A wait may end
    /// without one: callers check their predicate in a loop.
    package func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits for a signal until `deadline`; false when the deadline passed first.
    package func wait(until deadline: ContinuousClock.Instant) -> Bool {
        let left = deadline - ContinuousClock.now
        guard left > .zero else { return false }
        return wait(untilMonotonic: Self.monotonicNow() + Self.nanoseconds(left))
    }

    /// `duration` in nanoseconds, held to a far future where it would overflow.
    package static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds.multipliedReportingOverflow(by: 1_000_000_000).overflow
            ? Int64.max / 2 : seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// Waits for a signal until `deadline`, in nanoseconds on the monotonic clock
    /// (``monotonicNow()``); false when the deadline passed first.
    package func wait(untilMonotonic deadline: Int64) -> Bool {
        var end = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(condition, mutex, &end) != ETIMEDOUT
    }

    /// Nanoseconds on the monotonic clock the timed waits go by.
    package static func monotonicNow() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
