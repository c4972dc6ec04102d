/// The speeds of a segmented download's connections: each one's bytes, smoothed rate and request
/// cost as they come, the rates of the latest that left, and what each source's connections brought.
/// What a connection is expected to fetch at, and what is typical among its peers, are read here;
/// which connection gets which piece is the picker's (``SegmentTable``).
struct ConnectionSpeeds: Sendable, Equatable {
    typealias Worker = Int

    /// One connection's measured speed and progress.
    struct Connection: Sendable, Equatable {
        var bytes: Int64 = 0
        /// Bytes per second, smoothed; 0 until measured.
        var rate: Double = 0
        /// Bytes per second in the latest sample alone.
        var latestRate: Double = 0
        /// What the connection can be counted on for: the smoothed rate, or the latest sample when that
        /// is lower (a burst just ended). Windows and retirements are sized by it.
        var steadyRate: Double { latestRate > 0 ? min(rate, latestRate) : rate }
        var sampleStart: ContinuousClock.Instant
        var sampleBytes: Int64 = 0
        var lastProgress: ContinuousClock.Instant
        /// When it joined: its bytes over its lifetime are its speed when it leaves unmeasured (a
        /// connection that ends before its first rate sample, as all do on a fast link).
        var joined: ContinuousClock.Instant
        /// Since when it has been far slower than its peers, while it is.
        var slowSince: ContinuousClock.Instant?
        /// Seconds from a request to its first byte, smoothed: what each request costs; 0 until measured.
        var requestCost: Double = 0
        /// Whether its latest request still waits for its answer. A server that answers one request at
        /// a time (moto does) keeps the others waiting: that is no slow link, and replacing them only
        /// queues their requests again behind the ones the server is still working on.
        var awaitingAnswer = false
        /// The source it fetches from, when the file has several: it is judged slow against its own
        /// source's connections (a slow mirror's are all slow, and replacing one only reconnects to it).
        var group: Int?
        /// Its current window's first bytes came at `windowSince`, when it had `windowBytes` in all
        /// (nil while the window has none yet): what it brought since says how fast it is now.
        var windowSince: ContinuousClock.Instant?
        var windowBytes: Int64 = 0
        /// The most bytes one commit brought: how far apart its commits may lie at its speed.
        var largestCommit: Int64 = 0
        /// Since when it has had nothing to fetch because the horizon held its work back (an output
        /// that takes bytes in order had not taken enough): time that says nothing of its link.
        var waitingSince: ContinuousClock.Instant?
        /// When it asked for its current window (or that window's answer came next on it): its
        /// window's speed counts from then (``SegmentTable/windowEnded(_:)``).
        var windowAsked: ContinuousClock.Instant?
        /// Its ``bytes`` when it asked for its current window.
        var bytesAtAsk: Int64 = 0
        /// Where its current request ends, while it has asked for its next window ahead
        /// (``windowAhead(for:)``; its piece's window end is then that window's): what a retirement
        /// lets it finish.
        var requestEnd: Int64?

        /// What the connection shows it can do at `now`: its smoothed ``rate``, or less when its
        /// current window's bytes, over at least `settle`, came at a lower rate. Samples come only
        /// every so often, so a connection that slows down in the middle of a window (a server's
        /// bucket ran dry, another flow took its share of a link) keeps the speed it had until the
        /// next one; its progress in the window shows it sooner. The window is timed to its latest
        /// bytes (they come in steps: a socket buffer's worth, a pipe's), or to `now` once nothing
        /// has come for `settle` and four of its largest steps at its speed. At least a sixteenth
        /// of its smoothed rate (a hedge then still leaves it what is on its way).
        func currentRate(now: ContinuousClock.Instant, settle: Double) -> Double {
            let steady = rate
            guard steady > 0, !awaitingAnswer, let since = windowSince else { return steady }
            let silence = max(settle, 4 * Double(max(largestCommit, 65_536)) / steady)
            let end = (now - lastProgress).seconds >= silence ? now : lastProgress
            let elapsed = (end - since).seconds
            guard elapsed >= settle else { return steady }
            return min(steady, max(Double(bytes - windowBytes) / elapsed, steady / 16))
        }
    }

    /// Bytes one source's connections brought.
    struct SourceBytes: Sendable, Equatable {
        /// Everything the source brought in this run.
        var total: Int64 = 0
        /// What each connection fetching from it now brought from it.
        var perConnection: [Worker: Int64] = [:]
    }

    var connections: [Worker: Connection] = [:]
    /// The measured speeds of the latest connections that left (at most ``departedMemory``): a
    /// connection that joins is judged by its peers' speed, and when the fast ones have finished and
    /// left, the one still running is no peer to judge by (a newcomer would look as slow as the slow
    /// connection whose tail it should take over). As many as a download runs at once: the last few
    /// to leave are its stragglers (the fast ones finished first), and a newcomer judged by them alone
    /// looked as slow as they (1 MB/s where four connections in five ran at 20).
    var departedRates: [Double] = []
    static let departedMemory = 64
    /// What each source's connections brought while they fetched from it, by source
    /// (``Connection/group``): each source's connection count is measured from its own
    /// (``SourceCounts``). A connection that moves to another source or leaves takes its entry along;
    /// the source's total keeps what it brought.
    var bytesBySource: [Int: SourceBytes] = [:]

    /// A connection that left was measured at `rate`.
    mutating func departed(at rate: Double) {
        departedRates.append(rate)
        if departedRates.count > Self.departedMemory { departedRates.removeFirst() }
    }

    /// The median measured cost of a request (seconds to its first byte), 0 if none is measured.
    var typicalRequestCost: Double {
        Self.median(connections.values.map(\.requestCost).filter { $0 > 0 })
    }

    /// The median measured speed of the connections, 0 if none is measured.
    func typicalRate() -> Double {
        Self.median(connections.values.map(\.rate).filter { $0 > 0 })
    }

    /// What a connection not measured yet is expected to reach: the median speed of the measured
    /// connections and of the latest ones that left.
    func newcomerRate() -> Double {
        Self.median(connections.values.map(\.rate).filter { $0 > 0 } + departedRates)
    }

    /// What `worker` is expected to fetch at: its measured speed, or a newcomer's
    /// (``newcomerRate()``) while it has none.
    func expectedRate(of worker: Worker) -> Double {
        connections[worker].flatMap { $0.rate > 0 ? $0.rate : nil } ?? newcomerRate()
    }

    /// The middle value (the upper one of an even count), 0 of none.
    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }
}
