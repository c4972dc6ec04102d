import Synchronization

/// Live counters of one download, updated by the connections and read by progress displays.
package final class TransferCounters: Sendable {
    package init() {}

    let bytesWritten = Atomic<Int64>(0)
    package let bytesFetched = Atomic<Int64>(0)
    let totalBytes = Atomic<Int64>(-1)
    let activeConnections = Atomic<Int>(0)
    /// How many connections the download means to have now.
    let targetConnections = Atomic<Int>(0)
    let retries = Atomic<Int>(0)
    /// Time spent handing bytes to an output that takes them in order: waiting for its reader.
    package let outputWait = WaitClock()
    /// The retry the download is waiting for, if it is.
    private let waiting = Mutex<(retry: TransferProgress.Retry, until: ContinuousClock.Instant)?>(nil)

    /// The download waits `delay` before try `attempt` of `retries` because of `reason`.
    func waitForRetry(_ attempt: Int, of retries: Int, reason: String, delay: Duration) {
        let retry = TransferProgress.Retry(
            attempt: attempt, retries: retries, reason: reason, secondsLeft: delay.seconds)
        waiting.withLock { $0 = (retry, .now + delay) }
    }

    /// The wait is over.
    func retryStarted() {
        waiting.withLock { $0 = nil }
    }

    func addWritten(_ count: Int64) {
        bytesWritten.add(count, ordering: .relaxed)
        bytesFetched.add(count, ordering: .relaxed)
    }

    package var snapshot: TransferProgress {
        let total = totalBytes.load(ordering: .relaxed)
        return TransferProgress(
            bytesWritten: bytesWritten.load(ordering: .relaxed),
            totalBytes: total >= 0 ? total : nil,
            activeConnections: activeConnections.load(ordering: .relaxed),
            retries: retries.load(ordering: .relaxed),
            waitingToRetry: waiting.withLock { entry in
                entry.map { entry in
                    var retry = entry.retry
                    retry.secondsLeft = max(0, (entry.until - .now).seconds)
                    return retry
                }
            })
    }
}

/// A moment's view of a running download.
public struct TransferProgress: Sendable, Equatable {
    /// Bytes in the output file so far.
    public var bytesWritten: Int64
    /// The file's size, once known.
    public var totalBytes: Int64?
    /// Connections currently transferring.
    public var activeConnections: Int
    /// Retries so far.
    public var retries: Int
    /// The retry the download is waiting for (nothing is being transferred meanwhile), if it is.
    public var waitingToRetry: Retry? = nil

    /// A retry the download waits for: why, and when.
    public struct Retry: Sendable, Equatable {
        /// Which retry this is, from 1.
        public var attempt: Int
        /// How many retries the download may make in a row.
        public var retries: Int
        /// The failure that is being retried.
        public var reason: String
        /// Seconds until the retry starts.
        public var secondsLeft: Double
    }

    /// The fraction done, 0...1, when the size is known.
    public var fraction: Double? {
        guard let totalBytes else { return nil }
        return totalBytes == 0 ? 1 : Double(bytesWritten) / Double(totalBytes)
    }
}

/// How long something has waited in all, a wait under way included: the time a download spent
/// handing bytes to a reader that took them slowly (standard output, a pipe), which is no part of how
/// fast the network delivers.
package final class WaitClock: Sendable {
    private let state = Mutex<(total: Duration, since: ContinuousClock.Instant?)>((.zero, nil))

    /// A wait starts (one at a time: one thread hands bytes to an output).
    func begin(at now: ContinuousClock.Instant = .now) {
        state.withLock { $0.since = now }
    }

    /// The wait that started ends.
    func end(at now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            if let since = state.since { state.total += now - since }
            state.since = nil
        }
    }

    /// Every wait so far, up to `now` for one under way.
    package func total(at now: ContinuousClock.Instant = .now) -> Duration {
        state.withLock { state in state.total + (state.since.map { max(now - $0, .zero) } ?? .zero) }
    }

    /// Runs `body`, a wait.
    func timing<T>(_ body: () throws -> T) rethrows -> T {
        begin()
        defer { end() }
        return try body()
    }
}
