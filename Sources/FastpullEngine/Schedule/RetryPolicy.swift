import FoundationEssentials

/// How long to wait before retrying: exponential backoff with jitter, or what the server asked for.
package struct RetryPolicy: Sendable {
    var baseDelay: Duration
    /// Refused connections get the whole budget and the backoff, as any failure does
    /// (``Configuration/Retries/retriesRefusedConnections``): a service that is still starting.
    var retriesRefused = false
    var maximumDelay: Duration = .seconds(8)
    /// A server's `Retry-After` is honoured up to this long.
    var maximumRetryAfter: Duration = .seconds(60)
    /// How long failures in a row may be retried, from the first of them (nil: no limit in time).
    var maximumTime: Duration? = nil

    /// Refused connections are retried at most this many times, ``refusedDelay`` apart, unless
    /// ``retriesRefused``.
    static let refusedRetries = 2
    static let refusedDelay: Duration = .milliseconds(100)

    /// Whether `failure`, the `failures`-th in a row, may be tried again under a budget of `retries`.
    func allowsAnother(_ failure: Failure, failures: Int, retries: Int) -> Bool {
        if failure.unknownHost && !retriesRefused { return false }
        return failures <= (failure.refused && !retriesRefused ? min(retries, Self.refusedRetries) : retries)
    }

    /// How long to wait before trying again after `failure`, the `attempt`-th in a row.
    func delay(after failure: Failure, attempt: Int) -> Duration {
        failure.refused && !retriesRefused
            ? Self.refusedDelay : delay(attempt: attempt, retryAfter: failure.retryAfter)
    }

    func delay(attempt: Int, retryAfter: Duration? = nil) -> Duration {
        if let retryAfter { return min(retryAfter, maximumRetryAfter) }
        let exponent = min(max(attempt - 1, 0), 16)
        let ceiling = min(baseDelay * (1 << exponent), maximumDelay)
        // Full jitter on the upper half: between half and all of the ceiling.
        let fraction = Double.random(in: 0.5...1.0)
        return ceiling * fraction
    }

}

/// The one free retry a failure may get: a kept-alive connection that the server closed while it was
/// idle (during a `Retry-After` wait, say) is no failure of the server's, so the first such failure in
/// a row is retried on a new connection without counting. A second in a row counts, so a server that
/// closes every connection still ends; any other failure, or a success, re-arms it.
package struct StaleConnectionRetry: Sendable {
    private var used = false

    /// Whether `failure` is retried without counting it. `nothingWritten` is false once the try wrote
    /// bytes: then the connection did answer.
    mutating func isFree(_ failure: Failure, nothingWritten: Bool = true) -> Bool {
        guard failure.staleConnection && nothingWritten else {
            used = false
            return false
        }
        defer { used = true }
        return !used
    }

    /// A try succeeded: the next stale connection is free again.
    mutating func rearm() { used = false }
}
