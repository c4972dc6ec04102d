/// What size of window a source serves at full speed, measured as windows grow.
///
/// **The model.** A window's speed is its bytes over the time from its request to its last byte. On
/// most links it does not depend on the window's size; on some it does: nginx's `limit_rate` sends
/// what the socket takes at once (about 2 MB on loopback) and the rest of the answer at the limit,
/// so 1 MiB windows came at 230 MiB/s and the 3 to 5 MiB windows sized from that speed at 26 MB/s.
/// Windows therefore grow only by a **probe**, one connection's window at a time, of ``growth`` times
/// the largest size **proven**. A window is proven when it came at least ``slowdown`` of the speed of
/// the proven-size windows that ended in its second half (the latest one when none did and the count
/// is the same: what held for them held for it, a count that grew or a busy machine included;
/// without either, the window proves its size). A larger window that came slower than that, over at
/// least ``judgedSeconds`` (a moment's stall is no verdict), or that is still running at twice what
/// their speed needs for it (``judgeLate(size:asked:now:connections:)``), **limits** the source's
/// windows to the proven size for the rest of the download.
struct WindowSizes: Sendable, Equatable {
    /// A larger window slower than this share of the proven ones' speed limits the size.
    static let slowdown = 0.5
    /// The least time a window must have taken to be judged slower.
    static let judgedSeconds = 0.025
    /// Windows smaller than this are not judged (a request's fixed costs dominate them).
    static let smallestJudged: Int64 = 256 << 10
    /// A probe's size, in proven sizes.
    static let growth: Int64 = 4
    /// The proven-size windows remembered.
    static let remembered = 16

    /// A proven-size window: when it ended, its speed, and how many connections ran then.
    struct Sample: Sendable, Equatable {
        var end: ContinuousClock.Instant
        var speed: Double
        var connections: Int
    }

    /// The largest window that came at the speed of the smaller ones, 0 before any.
    private(set) var proven: Int64 = 0
    /// Whether a larger window came slower: windows stay at ``proven``.
    private(set) var limited = false
    /// The latest proven-size windows, oldest first.
    private(set) var recent: [Sample] = []

    /// The connection whose window is larger than the proven size (the probe), while one is: one at
    /// a time, so that a size that turns out slower costs one window, not every connection's.
    var probe: Int?
    /// The size of the probe's window.
    var probeSize: Int64 = 0

    /// The largest window `worker` may ask for now: ``growth`` times the proven size while none came
    /// slower and no other connection probes, the proven size otherwise; nil before any window is
    /// proven.
    func allowed(for worker: Int) -> Int64? {
        guard proven > 0 else { return nil }
        return limited || (probe != nil && probe != worker) ? proven : Self.growth * proven
    }

    /// `worker` asked for a window of `size`: larger than the proven size, it is the probe.
    mutating func asked(_ worker: Int, size: Int64) {
        guard proven > 0, !limited, size > proven, probe == nil || probe == worker else { return }
        probe = worker
        probeSize = size
    }

    /// A window of `bytes`, asked for at `asked`, brought its last byte at `end`, while `connections`
    /// ran.
    mutating func finished(
        bytes: Int64, asked: ContinuousClock.Instant, end: ContinuousClock.Instant, connections: Int
    ) {
        let seconds = (end - asked).seconds
        guard bytes >= Self.smallestJudged, seconds > 0 else { return }
        let speed = Double(bytes) / seconds
        if bytes > proven, let reference = reference(asked: asked, end: end, connections: connections),
            speed < Self.slowdown * reference
        {
            if seconds >= Self.judgedSeconds { limited = true }
            return
        }
        if bytes > proven, !limited { proven = bytes }
        recent.append(Sample(end: end, speed: speed, connections: connections))
        if recent.count > Self.remembered { recent.removeFirst() }
    }

    /// Whether a probe of `size` bytes asked at `asked` is late at `now`: it has run more than twice
    /// what the proven windows' speed needs for it, and at least ``judgedSeconds``. A late probe is
    /// judged at once (the size is limited) and the rest of its window taken over
    /// (``SegmentTable/lateProbeSplit(for:now:)``): waiting for its end cost a whole slow window.
    ///
    /// Judged, as a finished one is, against the proven windows that ended since it was asked or
    /// that ran with as many connections as now; none: no verdict.
    mutating func judgeLate(
        size: Int64, asked: ContinuousClock.Instant, now: ContinuousClock.Instant, connections: Int
    ) -> Bool {
        guard !limited else { return false }
        let peers = recent.filter { $0.end >= asked || $0.connections == connections }.map(\.speed)
        guard !peers.isEmpty else { return false }
        let speed = ConnectionSpeeds.median(peers)
        let seconds = (now - asked).seconds
        guard speed > 0, seconds >= Self.judgedSeconds, seconds > 2 * Double(size) / speed else {
            return false
        }
        limited = true
        return true
    }

    /// The speed a larger window asked at `asked` and ended at `end` is judged against: the median
    /// of the proven-size windows that ended in its second half (what held then held for it: a count
    /// that grew meanwhile took from every window's speed, the small ones' too), or the latest one
    /// when none did and as many connections ran then as now; nil otherwise (no verdict).
    private func reference(
        asked: ContinuousClock.Instant, end: ContinuousClock.Instant, connections: Int
    ) -> Double? {
        let half = asked + (end - asked) / 2
        let peers = recent.filter { $0.end >= half }.map(\.speed)
        if !peers.isEmpty { return ConnectionSpeeds.median(peers) }
        guard let latest = recent.last, latest.connections == connections else { return nil }
        return latest.speed
    }
}
