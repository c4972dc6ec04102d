/// The scheduler's state as a pure value: the segments of the file, who fetches which, how fast, and
/// the contiguous prefix that is complete. Events go in (a connection is idle, claimed and wrote bytes,
/// failed, time passed), decisions come out (fetch this window, steal that range, drop that
/// connection). No I/O and no clock of its own: tests drive every transition.
///
/// Ownership rules that keep a byte from being written twice: a segment has at most one owner; the
/// owner writes `[written, claimed)` and nobody else touches that range; a split or a cut never moves
/// a segment's end below its `claimed` offset, and the owner stops exactly at the (possibly new) end.
struct SegmentTable: Sendable, Equatable {
    typealias Worker = Int

    struct Settings: Sendable, Equatable {
        /// A steal must leave the thief at least this much.
        var minimumSplit: Int64 = 1 << 20
        /// The first window of a connection whose speed is not known yet.
        var initialWindow: Int64 = 1 << 20
        /// A connection taking a waiting range may take the untouched ranges right after it too, so that
        /// one request carries about `windowSeconds` of its speed (fewer requests, fewer round trips),
        /// up to this size (which bounds how far ahead of the hashed prefix the file is written).
        var maximumMergedPiece: Int64 = 8 << 20
        /// Joining stops while fewer waiting ranges than this would be left, so that every connection
        /// the download means to open still finds one.
        var expectedConnections = 1
        /// No window is larger than this.
        var maximumWindow: Int64 = 64 << 20
        /// A window holds about this many seconds of the connection's measured speed.
        var windowSeconds: Double = 1
        /// A connection that receives nothing for this long gives its range back.
        var stallTimeout: Duration = .seconds(10)
        /// A connection this many times slower than the typical one, for `slowGrace` on end, gives
        /// its range back too and reconnects: a server often serves some connections far slower than
        /// others, and a new connection usually lands on a fast one.
        var slowFactor: Double = 4
        var slowGrace: Duration = .seconds(1)
        /// How often a connection's speed is sampled (then smoothed).
        var rateSample: Duration = .milliseconds(250)
        /// A tail is re-fetched by an idle connection when its owner would take this many times longer
        /// and at least `hedgeMinimumGain` seconds more.
        var hedgeFactor: Double = 2
        var hedgeMinimumGain: Double = 0.2
        /// What a hedging connection leaves the slow owner: this many seconds of the owner's speed.
        var hedgeGrace: Double = 0.25
        /// No hedge for less than this.
        var minimumHedge: Int64 = 64 << 10
    }

    /// One segment and its state.
    struct Piece: Sendable, Equatable {
        var segment: Segment
        /// Bytes `[resumeOffset, claimed)` are being written by the owner right now.
        var claimed: Int64
        var owner: Worker?
        /// The end of the owner's current request window.
        var windowEnd: Int64

        var start: Int64 { segment.start }
        var end: Int64 { segment.end }
        /// Bytes nobody has claimed yet.
        var unclaimed: Int64 { segment.end - claimed }
    }

    /// A connection's view: its piece and its measured speed.
    struct Connection: Sendable, Equatable {
        /// The start offset of the piece it owns (stable: a piece's start never moves).
        var piece: Int64?
        var bytes: Int64 = 0
        /// Bytes per second, smoothed; 0 until measured.
        var rate: Double = 0
        var sampleStart: ContinuousClock.Instant
        var sampleBytes: Int64 = 0
        var lastProgress: ContinuousClock.Instant
        /// Since when it has been far slower than its peers, while it is.
        var slowSince: ContinuousClock.Instant?
    }

    /// What an idle connection is told to fetch: `range` of the piece starting at `piece`.
    struct Window: Sendable, Equatable {
        var piece: Int64
        var range: Range<Int64>
    }

    /// How a connection got its work, for traces and tests.
    enum Assignment: Sendable, Equatable {
        case continued
        case waiting
        case stolen(from: Worker, at: Int64)
        case hedged(from: Worker, at: Int64)
    }

    let settings: Settings
    /// No window reaches past this offset (nil: no limit). An output that takes bytes in order only
    /// (a pipe, standard output) holds at most a fixed amount ahead of what it has taken; the horizon
    /// is that limit, and it moves on as the output takes bytes.
    var horizon: Int64?
    private(set) var pieces: [Piece]
    private(set) var connections: [Worker: Connection] = [:]
    /// The first piece that is not complete.
    private var firstIncomplete = 0

    init(segments: [Segment], settings: Settings = Settings()) {
        self.settings = settings
        pieces = segments.map {
            Piece(segment: $0, claimed: $0.resumeOffset, owner: nil, windowEnd: $0.resumeOffset)
        }
        advanceFrontier()
    }

    // MARK: Reading

    var segments: [Segment] { pieces.map(\.segment) }
    var writtenBytes: Int64 { pieces.reduce(0) { $0 + $1.segment.written } }
    var isComplete: Bool { firstIncomplete == pieces.count }

    /// The end of the contiguous complete prefix.
    var frontier: Int64 {
        guard firstIncomplete < pieces.count else { return pieces.last?.end ?? 0 }
        return pieces[firstIncomplete].segment.resumeOffset
    }

    /// Whether some piece is incomplete and has no owner.
    var hasWaitingWork: Bool { pieces.contains { $0.owner == nil && !$0.segment.isComplete } }

    /// Whether a connection that joined now would get work: a waiting range, a range worth stealing,
    /// or a tail worth hedging at the connections' typical speed.
    var hasWorkForAnotherConnection: Bool {
        waitingIndex() != nil || stealCandidate() != nil || hedgeCandidate(for: -1) != nil
    }

    /// Whether unclaimed bytes lie past the ``horizon``: work a connection with nothing to do now will
    /// get once the horizon moves, so it should wait rather than leave.
    var isHeldByHorizon: Bool {
        guard let horizon else { return false }
        return pieces.contains { $0.unclaimed > 0 && $0.end > horizon }
    }

    /// Whether `offset` may be handed out in a window now.
    private func withinHorizon(_ offset: Int64) -> Bool { horizon.map { offset < $0 } ?? true }

    /// The first piece nobody owns with bytes to fetch inside the horizon.
    private func waitingIndex() -> Int? {
        pieces.firstIndex { $0.owner == nil && $0.unclaimed > 0 && withinHorizon($0.claimed) }
    }

    /// Connections that received bytes within the last two seconds, other than `worker`.
    func workingConnections(besides worker: Worker, now: ContinuousClock.Instant) -> Int {
        connections.filter {
            $0.key != worker && $0.value.bytes > 0 && now - $0.value.lastProgress < .seconds(2)
        }.count
    }

    func piece(of worker: Worker) -> Piece? {
        guard let start = connections[worker]?.piece, let index = index(of: start) else { return nil }
        return pieces[index]
    }

    // MARK: Events

    /// A connection starts (or restarts) taking part.
    mutating func join(_ worker: Worker, now: ContinuousClock.Instant) {
        if connections[worker] == nil {
            connections[worker] = Connection(piece: nil, sampleStart: now, lastProgress: now)
        }
    }

    /// The next window for an idle connection: more of its own piece, a waiting piece, half of the
    /// largest remaining range, or the tail of a much slower connection. Nil when nothing is left.
    mutating func nextWindow(for worker: Worker, now: ContinuousClock.Instant) -> (Window, Assignment)? {
        join(worker, now: now)
        if let start = connections[worker]?.piece, let index = index(of: start) {
            if pieces[index].owner == worker, pieces[index].unclaimed > 0,
                withinHorizon(pieces[index].claimed)
            {
                return (openWindow(index, for: worker), .continued)
            }
            drop(worker)
        }
        if let index = waitingIndex() {
            mergeFollowing(index, upTo: windowSize(for: worker))
            take(index, for: worker, now: now)
            return (openWindow(index, for: worker), .waiting)
        }
        if let (index, victim, at) = stealCandidate() {
            let new = split(index, at: at)
            take(new, for: worker, now: now)
            return (openWindow(new, for: worker), .stolen(from: victim, at: at))
        }
        if let (index, victim, at) = hedgeCandidate(for: worker) {
            let new = split(index, at: at)
            take(new, for: worker, now: now)
            return (openWindow(new, for: worker), .hedged(from: victim, at: at))
        }
        return nil
    }

    /// How many of the next `count` bytes the connection may write; fewer when its end moved closer
    /// (a steal or hedge cut it). The claimed bytes must then be written and committed.
    mutating func claim(_ worker: Worker, count: Int64) -> Int64 {
        guard let start = connections[worker]?.piece, let index = index(of: start),
            pieces[index].owner == worker
        else { return 0 }
        let allowed = min(count, pieces[index].unclaimed)
        pieces[index].claimed += allowed
        return allowed
    }

    /// Records `count` claimed bytes as written. Returns true when the frontier moved.
    @discardableResult
    mutating func commit(_ worker: Worker, count: Int64, now: ContinuousClock.Instant) -> Bool {
        guard let start = connections[worker]?.piece, let index = index(of: start) else { return false }
        precondition(pieces[index].segment.written + count <= pieces[index].claimed - pieces[index].start)
        pieces[index].segment.written += count
        if var connection = connections[worker] {
            connection.bytes += count
            connection.lastProgress = now
            let elapsed = (now - connection.sampleStart).seconds
            if elapsed >= settings.rateSample.seconds {
                let instant = Double(connection.bytes - connection.sampleBytes) / elapsed
                connection.rate = connection.rate == 0 ? instant : 0.5 * connection.rate + 0.5 * instant
                connection.sampleStart = now
                connection.sampleBytes = connection.bytes
            }
            connections[worker] = connection
        }
        guard index == firstIncomplete else { return false }
        advanceFrontier()
        return true
    }

    /// The connection stops taking part (it failed, gave up or was dropped): its unfinished range
    /// waits for another connection, from its first unwritten byte.
    mutating func leave(_ worker: Worker) {
        drop(worker)
        connections[worker] = nil
    }

    /// Connections that received nothing for the stall timeout while owning a range, or that have
    /// been far slower than their peers for the slow grace. Their ranges are cut at what they claimed
    /// and wait for others; the caller closes their sockets, and they start over on new ones.
    mutating func stalledConnections(now: ContinuousClock.Instant) -> [Worker] {
        var stalled: [Worker] = []
        let typical = typicalRate()
        let measured = connections.values.count { $0.rate > 0 }
        for (worker, connection) in connections.sorted(by: { $0.key < $1.key }) {
            guard connection.piece != nil else {
                connections[worker]?.slowSince = nil
                continue
            }
            let silent = now - connection.lastProgress >= settings.stallTimeout
            let slow =
                measured >= 3 && connection.rate > 0 && connection.rate * settings.slowFactor < typical
            connections[worker]?.slowSince = slow ? (connection.slowSince ?? now) : nil
            let slowTooLong = slow && now - (connection.slowSince ?? now) >= settings.slowGrace
            guard silent || slowTooLong, giveBackUnclaimed(of: worker) else { continue }
            // Its next connection is a new one: measure it afresh.
            connections[worker]?.rate = 0
            connections[worker]?.slowSince = nil
            connections[worker]?.sampleStart = now
            connections[worker]?.sampleBytes = connection.bytes
            stalled.append(worker)
        }
        return stalled
    }

    /// The connection is leaving on purpose (fewer connections do as well): it finishes the window it
    /// has asked for (the server is sending those bytes already; cutting them would only waste them),
    /// and the rest of its range past that window waits for the others.
    mutating func release(_ worker: Worker) {
        guard let start = connections[worker]?.piece, let index = index(of: start),
            pieces[index].owner == worker
        else { return }
        let keep = max(pieces[index].claimed, pieces[index].windowEnd)
        guard keep > pieces[index].claimed || pieces[index].claimed > pieces[index].segment.resumeOffset
        else {
            giveBackUnclaimed(of: worker)
            return
        }
        if keep < pieces[index].end { _ = split(index, at: keep) }
    }

    /// Cuts the worker's piece at what it has claimed; returns false if it had nothing unclaimed.
    @discardableResult
    private mutating func giveBackUnclaimed(of worker: Worker) -> Bool {
        guard let start = connections[worker]?.piece, let index = index(of: start),
            pieces[index].owner == worker,
            pieces[index].unclaimed > 0
        else { return false }
        if pieces[index].claimed == pieces[index].segment.resumeOffset {
            // Nothing is being written: the whole rest goes back.
            pieces[index].owner = nil
            pieces[index].windowEnd = pieces[index].claimed
            connections[worker]?.piece = nil
        } else {
            // Bytes may still be on their way to the file: the owner keeps exactly those.
            _ = split(index, at: pieces[index].claimed)
        }
        return true
    }

    // MARK: Decisions

    /// The in-flight or waiting range with the most unclaimed bytes, split at its midpoint (never
    /// inside its owner's current window), when the upper half is at least the minimum split.
    private func stealCandidate() -> (index: Int, victim: Worker, at: Int64)? {
        var best: (index: Int, victim: Worker, at: Int64, upper: Int64)?
        for (index, piece) in pieces.enumerated() {
            guard let owner = piece.owner, piece.unclaimed > 0 else { continue }
            let middle = piece.claimed + (piece.unclaimed + 1) / 2
            let at = max(middle, piece.windowEnd)
            let upper = piece.end - at
            guard upper >= settings.minimumSplit, withinHorizon(at) else { continue }
            if best == nil || upper > best!.upper { best = (index, owner, at, upper) }
        }
        return best.map { ($0.index, $0.victim, $0.at) }
    }

    /// A tail worth fetching again: its owner's measured speed would take `hedgeFactor` times longer
    /// than this connection's (or its peers' typical speed, for a new one). The owner keeps only what
    /// it will fetch in the next `hedgeGrace` seconds and stops there.
    private func hedgeCandidate(for worker: Worker) -> (index: Int, victim: Worker, at: Int64)? {
        let myRate = connections[worker].flatMap { $0.rate > 0 ? $0.rate : nil } ?? typicalRate()
        guard myRate > 0 else { return nil }
        var best: (index: Int, victim: Worker, at: Int64, gain: Double)?
        for (index, piece) in pieces.enumerated() {
            guard let owner = piece.owner, owner != worker, piece.unclaimed > 0,
                let victimRate = connections[owner]?.rate, victimRate > 0
            else { continue }
            let keep = Int64((victimRate * settings.hedgeGrace).rounded(.up))
            let at = min(piece.claimed + keep, piece.end)
            let tail = piece.end - at
            guard tail >= settings.minimumHedge, withinHorizon(at) else { continue }
            let victimSeconds = Double(piece.unclaimed) / victimRate
            let mySeconds = Double(tail) / myRate + settings.hedgeGrace
            guard victimSeconds > settings.hedgeFactor * mySeconds,
                victimSeconds - mySeconds >= settings.hedgeMinimumGain
            else { continue }
            let gain = victimSeconds - mySeconds
            if best == nil || gain > best!.gain { best = (index, owner, at, gain) }
        }
        return best.map { ($0.index, $0.victim, $0.at) }
    }

    /// The median measured speed of the connections, 0 if none is measured.
    private func typicalRate() -> Double {
        let rates = connections.values.map(\.rate).filter { $0 > 0 }.sorted()
        return rates.isEmpty ? 0 : rates[rates.count / 2]
    }

    // MARK: Mechanics

    private func index(of start: Int64) -> Int? {
        var low = 0
        var high = pieces.count - 1
        while low <= high {
            let middle = (low + high) / 2
            if pieces[middle].start == start { return middle }
            if pieces[middle].start < start { low = middle + 1 } else { high = middle - 1 }
        }
        return nil
    }

    /// About `windowSeconds` of the connection's measured speed (its peers' typical speed while it
    /// has none), within the initial and maximum window.
    private func windowSize(for worker: Worker) -> Int64 {
        let own = connections[worker]?.rate ?? 0
        let rate = own > 0 ? own : typicalRate()
        let wanted = rate > 0 ? Int64(rate * settings.windowSeconds) : settings.initialWindow
        return min(max(wanted, settings.initialWindow), settings.maximumWindow)
    }

    /// Joins the untouched, unowned pieces right after `index` into it while its unclaimed part stays
    /// within `limit` and ``Settings/maximumMergedPiece``.
    private mutating func mergeFollowing(_ index: Int, upTo limit: Int64) {
        // Never more than a fair share of what is still waiting, so the last ranges stay small and
        // every connection finishes at about the same time.
        let waiting = pieces[index...].reduce(Int64(0)) { $0 + ($1.owner == nil ? $1.unclaimed : 0) }
        let share = waiting / Int64(max(settings.expectedConnections, 1))
        let cap = max(min(limit, settings.maximumMergedPiece, share), pieces[index].unclaimed)
        var waitingAfter = pieces[(index + 1)...].count { $0.owner == nil && $0.unclaimed > 0 }
        while index + 1 < pieces.count, waitingAfter > settings.expectedConnections {
            let next = pieces[index + 1]
            guard next.owner == nil, next.segment.written == 0, next.claimed == next.start,
                pieces[index].unclaimed + next.segment.length <= cap
            else { break }
            waitingAfter -= 1
            pieces[index].segment.end = next.end
            pieces.remove(at: index + 1)
        }
    }

    /// The window a connection fetches next from its piece: about `windowSeconds` of its speed, never
    /// past the ``horizon``.
    private mutating func openWindow(_ index: Int, for worker: Worker) -> Window {
        let size = windowSize(for: worker)
        let from = pieces[index].claimed
        let to = min(pieces[index].end, from + size, horizon ?? Int64.max)
        pieces[index].windowEnd = to
        return Window(piece: pieces[index].start, range: from..<to)
    }

    private mutating func take(_ index: Int, for worker: Worker, now: ContinuousClock.Instant) {
        pieces[index].owner = worker
        connections[worker]?.piece = pieces[index].start
        connections[worker]?.lastProgress = now
    }

    /// Ends a connection's ownership: unclaimed-but-unwritten bytes return to the piece.
    private mutating func drop(_ worker: Worker) {
        guard let start = connections[worker]?.piece, let index = index(of: start) else { return }
        connections[worker]?.piece = nil
        guard pieces[index].owner == worker else { return }
        pieces[index].owner = nil
        pieces[index].claimed = pieces[index].segment.resumeOffset
        pieces[index].windowEnd = pieces[index].claimed
    }

    /// Splits a piece at `at` (between its claimed offset and its end); the upper part is a new
    /// waiting piece right after it. Returns the new piece's index.
    private mutating func split(_ index: Int, at: Int64) -> Int {
        precondition(at > pieces[index].start && at >= pieces[index].claimed && at < pieces[index].end)
        let upper = Segment(start: at, end: pieces[index].end)
        pieces[index].segment.end = at
        pieces[index].windowEnd = min(pieces[index].windowEnd, at)
        pieces.insert(Piece(segment: upper, claimed: at, owner: nil, windowEnd: at), at: index + 1)
        if pieces[index].segment.isComplete, index == firstIncomplete { advanceFrontier() }
        return index + 1
    }

    private mutating func advanceFrontier() {
        while firstIncomplete < pieces.count, pieces[firstIncomplete].segment.isComplete {
            firstIncomplete += 1
        }
    }
}
