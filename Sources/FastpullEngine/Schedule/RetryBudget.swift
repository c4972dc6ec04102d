/// The one retry policy of a download's connections: what a failure leads to, decided from the
/// failure and the failures before it in a row, with every limit in one place. Pure: the loops that
/// fetch (the probe, the segment fetcher, the stream) ask it and do what it says.
///
/// The model: a try fails; a kept-alive connection that the server closed while it was idle is no
/// failure of the server's, so the first such in a row is tried again at once without counting
/// (``StaleConnectionRetry``); any other failure counts, and is tried again after a backoff
/// (``RetryPolicy``) while the count stays within ``retries`` (within
/// ``RetryPolicy/refusedRetries`` for refused connections: a port nobody listens on does not come
/// back in a second), and, with ``RetryPolicy/maximumTime``, while the wait ends within that time
/// of the first failure in a row; a stall that delivered nothing counts like a failure. Bytes that a try wrote
/// and that count (the segment fetcher's, not the stream's, which starts over) are progress: the
/// count starts again after them.
package struct RetryBudget: Sendable {
    /// What to do after a failed try.
    enum Decision: Equatable, Sendable {
        /// Try again at once, without counting.
        case now
        /// Try again after `delay`; the try that failed was the `attempt`-th failure in a row.
        case after(Duration, attempt: Int)
        /// No more tries: the failure stands.
        case giveUp
    }

    /// Counted failures in a row a download may retry (``Configuration/Retries/limit``).
    let retries: Int
    let policy: RetryPolicy
    /// Counted failures in a row so far.
    private(set) var failures = 0
    /// When the first of the failures in a row came (``RetryPolicy/maximumTime`` counts from it).
    private var firstFailure: ContinuousClock.Instant?
    private var stale = StaleConnectionRetry()

    /// A source that sent nothing for the stall timeout this many times in a row is dropped while
    /// another source is left.
    var stallsBeforeDroppingASource: Int { min(retries, 2) }

    /// A source whose requests failed this many times in a row (however much each delivered) is
    /// dropped while another source is left.
    static func failuresBeforeDroppingASource(retries: Int) -> Int { max(min(retries, 3), 1) }

    /// A mirror's probe is tried at most this many times again: the other sources serve meanwhile.
    static func mirrorProbeRetries(retries: Int) -> Int { min(retries, 1) }

    init(retries: Int, policy: RetryPolicy) {
        self.retries = retries
        self.policy = policy
    }

    /// After a try that failed with `failure` (a retryable one); `wroteBytes`: the try wrote bytes,
    /// so its connection did answer and was not stale.
    mutating func decide(
        after failure: Failure, wroteBytes: Bool = false, now: ContinuousClock.Instant = .now
    ) -> Decision {
        if stale.isFree(failure, nothingWritten: !wroteBytes) { return .now }
        failures += 1
        if failures == 1 { firstFailure = now }
        guard policy.allowsAnother(failure, failures: failures, retries: retries) else { return .giveUp }
        let delay = policy.delay(after: failure, attempt: failures)
        if let limit = policy.maximumTime, let firstFailure, now + delay - firstFailure > limit {
            return .giveUp
        }
        return .after(delay, attempt: failures)
    }

    /// After a try that the stall timeout stopped; `wroteBytes`: it delivered something first. Whether
    /// another try may follow.
    mutating func stalled(wroteBytes: Bool) -> Bool {
        if !wroteBytes { failures += 1 }
        return failures <= retries
    }

    /// A try wrote bytes that count: the failures before it no longer do.
    mutating func progressed() {
        failures = 0
        firstFailure = nil
    }

    /// A try succeeded: the count starts again, and the next stale connection is free.
    mutating func succeeded() {
        failures = 0
        firstFailure = nil
        stale.rearm()
    }
}
