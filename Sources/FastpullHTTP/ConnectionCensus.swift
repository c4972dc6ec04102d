import FastpullNet

/// How many connections are open to each host (a name and a port), counted from the moment one is
/// opened until it is closed, whoever holds it (a probe, a fetch, the idle cache), and the most
/// there were at once.
package final class ConnectionCensus: Sendable {
    package init() {}

    private let counts = PlainMutex<[String: (open: Int, peak: Int)]>([:])

    package func opened(_ host: String) {
        counts.withLock { counts in
            var count = counts[host, default: (0, 0)]
            count.open += 1
            count.peak = max(count.peak, count.open)
            counts[host] = count
        }
    }

    package func closed(_ host: String) {
        counts.withLock { $0[host]?.open -= 1 }
    }

    /// The connections open to `host` now.
    package func open(_ host: String) -> Int { counts.withLock { $0[host]?.open ?? 0 } }

    /// The most connections open to `host` at once so far.
    package func peak(_ host: String) -> Int { counts.withLock { $0[host]?.peak ?? 0 } }
}
