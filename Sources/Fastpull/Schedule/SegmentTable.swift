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
        /// The most of a request's time its fixed cost (the wait for the first byte: a round trip, and
        /// an object store's time to find the object) may take: windows of a connection whose requests
        /// cost that much grow until the cost is this share of the request.
        var requestCostShare = 0.05
        /// A steal may cut into the window its owner is fetching (the owner then stops at the cut) when
        /// the owner would need longer than this for the rest of it (or four request costs, if more).
        var stealCutSeconds = 0.2
        /// The round trip of the path (the quickest connection setup seen).
        var roundTrip: Duration = .milliseconds(1)
        /// A connection that receives nothing for this long gives its range back.
        var stallTimeout: Duration = .seconds(10)
        /// A connection this many times slower than the typical one, for `slowGrace` on end, gives
        /// its range back too and reconnects: a server often serves some connections far slower than
        /// others, and a new connection usually lands on a fast one.
        var slowFactor: Double = 4
        var slowGrace: Duration = .seconds(1)
        /// How often a connection's speed is sampled (then smoothed).
        var rateSample: Duration = .milliseconds(250)
        /// A window that has run this long (at least; and two of its connection's request costs and
        /// four round trips) shows how fast its connection is now (see
        /// ``Connection/currentRate(now:settle:)``): hedges judge an owner by it.
        var windowSettle: Duration = .milliseconds(100)
        /// A tail is re-fetched by an idle connection when its owner would take this many times longer
        /// and at least `hedgeMinimumGain` seconds more.
        var hedgeFactor: Double = 2
        var hedgeMinimumGain: Double = 0.2
        /// What a hedging connection leaves the slow owner: this many seconds of the owner's speed, or
        /// less when the hedging connection's requests are measured to cost less (four times their
        /// cost, at least a quarter of this); a quarter of it for the piece the hash waits for and
        /// at the end.
        var hedgeGrace: Double = 0.25
        /// No hedge for less than this.
        var minimumHedge: Int64 = 64 << 10
        /// An endgame split (the last ranges halved between connections of about one speed) leaves
        /// each half at least this much, and saves at least `endgameMinimumGain` seconds (and two of
        /// the taker's request costs). Where the limit is shared, at least a quarter of
        /// `minimumSplit` and twice the gain: halving a range there brings it no sooner (the link is
        /// the limit, and it speeds up the connections left as others end), and the half cut from a
        /// window throws away what the server had queued for it.
        var endgameMinimumHalf: Int64 = 64 << 10
        var endgameMinimumGain = 0.025
        /// The piece the hash waits for is taken over even while other work waits, when its owner
        /// needs at least this many seconds for the rest of it (and another would be much faster).
        var frontierSlack = 0.1
        /// The piece the hash waits for is split when the rest of the download would write more than
        /// this meanwhile.
        var frontierBacklog: Int64 = 64 << 20
        /// The limit is shared by all connections (a capped link, a busy server: more connections did
        /// not raise the throughput, and the ones there before lost what the newcomers got). A
        /// request's fixed cost is then hidden by the other connections, which keep the limit busy
        /// meanwhile, so windows are small: ``sharedWindowSeconds`` of a connection's speed, at least
        /// ``sharedMinimumWindow``, with their fixed cost up to ``sharedRequestCostShare`` of their
        /// time. What small windows buy: the bytes a server has queued for a connection (its socket
        /// buffers, half a megabyte or more each) are bounded by what the window has left, and those
        /// are what a crash, a cut or a replaced connection throws away.
        var sharedLimit = false
        var sharedWindowSeconds = 0.1
        var sharedMinimumWindow: Int64 = 256 << 10
        var sharedRequestCostShare = 0.5
        /// On a path whose round trip (``roundTrip``) is at least this long, in seconds (a real
        /// network's, not loopback's or a LAN's), a connection sends the request for its next window on
        /// the same connection before its current answer ends (``aheadLead(for:)``). Not by the
        /// requests' cost: on a loaded machine that is the wait for a thread, on loopback too, and
        /// requests sent ahead there only added aborted ones (a cut closes a connection with a request
        /// out ahead), which a cache in front of an origin turned into slices fetched twice.
        var aheadMinimumRoundTrip = 0.002
        /// Whether requests may be sent ahead at all: off once a server left one unanswered.
        var requestsAhead = true
        /// What a connection carried in an earlier run of the same download (``LinkMemory``), in
        /// bytes per second: windows are sized for it until a connection of this run is measured (0:
        /// nothing known, the first windows are ``initialWindow``).
        var priorRate: Double = 0
    }

    /// Follows the download's connection count and throughput: every window's share of the waiting
    /// work is `1/connections`, and together the windows may reach ahead of the contiguous prefix (which
    /// the hash follows) by at most ``aheadBudget(throughput:)``, each its share of that.
    /// Windows are small where the controller found the limit shared (``Settings/sharedLimit``).
    /// While the count ramps (from the start, or on from a probe that paid), the work is shared out for
    /// the connections its next steps may open (four times as many: the first step multiplies them by
    /// eight, a later one by two, or by eight when the newcomers cost the others nothing; sharing for
    /// the maximum at once made the simulator's `limit_rate` model slower, and sharing for eight
    /// times as many changed no model): the first four would otherwise join pieces
    /// into shares of a quarter of the file each, which the newcomers then steal, cutting the owners'
    /// requests and reconnecting them (on a link that limits each connection, into TCP's slow start,
    /// and into whatever speed the new port gets).
    static func tuned(_ settings: Settings, to controller: ConnectionController) -> Settings {
        var settings = settings
        let ramping = controller.phase == .ramping
        let count = max(ramping ? min(controller.maximum, controller.target * 4) : controller.target, 1)
        settings.expectedConnections = count
        settings.maximumMergedPiece = max(
            4 << 20, aheadBudget(throughput: controller.throughput) / Int64(count))
        settings.sharedLimit = controller.limitIsShared
        return settings
    }

    /// How far all windows together may reach ahead of the hashed prefix: 256 MiB, or two seconds of
    /// the download's throughput where that is more (a fast download with long round trips needs large
    /// windows to keep each request's cost small; a hash that falls behind shows at the end as the tail
    /// it still has to read, a bounded one).
    static func aheadBudget(throughput: Double) -> Int64 {
        max(256 << 20, Int64(min(throughput * 2, Double(Int64.max / 4))))
    }

    /// One segment and its state.
    struct Piece: Sendable, Equatable {
        var segment: Segment
        /// Bytes `[resumeOffset, claimed)` are being written by the owner right now.
        var claimed: Int64
        var owner: Worker?
        /// The end of the owner's current request window.
        var windowEnd: Int64
        /// Whether the owner reads the probe's answer (``adopt(_:end:requestCost:now:)``).
        var opening = false

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
        /// Bytes per second in the latest sample alone.
        var latestRate: Double = 0
        /// What the connection can be counted on for: the smoothed rate, or the latest sample when that
        /// is lower (a burst just ended). Windows and retirements are sized by it.
        var steadyRate: Double { latestRate > 0 ? min(rate, latestRate) : rate }
        var sampleStart: ContinuousClock.Instant
        var sampleBytes: Int64 = 0
        var lastProgress: ContinuousClock.Instant
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
        /// The probe's answer, already on its way (``adopt(_:end:requestCost:now:)``).
        case opened
        /// More of its piece, asked for on its connection before its previous answer ended
        /// (``windowAhead(for:)``).
        case ahead
    }

    /// How it decides; the download adjusts the connection-dependent ones as its count changes.
    var settings: Settings
    /// No window reaches past this offset (nil: no limit). An output that takes bytes in order only
    /// (a pipe, standard output) holds at most a fixed amount ahead of what it has taken; the horizon
    /// is that limit, and it moves on as the output takes bytes.
    var horizon: Int64?
    private(set) var pieces: [Piece]
    private(set) var connections: [Worker: Connection] = [:]
    /// The measured speeds of the latest connections that left (at most ``departedMemory``): a
    /// connection that joins is judged by its peers' speed, and when the fast ones have finished and
    /// left, the one still running is no peer to judge by (a newcomer would look as slow as the slow
    /// connection whose tail it should take over). As many as a download runs at once: the last few
    /// to leave are its stragglers (the fast ones finished first), and a newcomer judged by them alone
    /// looked as slow as they (1 MB/s where four connections in five ran at 20).
    private var departedRates: [Double] = []
    private static let departedMemory = 64
    /// The first piece that is not complete.
    private var firstIncomplete = 0

    init(segments: [Segment], settings: Settings = Settings()) {
        self.settings = settings
        pieces = segments.map {
            Piece(segment: $0, claimed: $0.resumeOffset, owner: nil, windowEnd: $0.resumeOffset)
        }
        writtenBytes = segments.reduce(0) { $0 + $1.written }
        advanceFrontier()
    }

    // MARK: Reading

    var segments: [Segment] { pieces.map(\.segment) }
    /// Bytes written in all pieces (kept as a running count: read at every tick, under the lock).
    private(set) var writtenBytes: Int64 = 0
    var isComplete: Bool { firstIncomplete == pieces.count }

    /// The end of the contiguous complete prefix.
    var frontier: Int64 {
        guard firstIncomplete < pieces.count else { return pieces.last?.end ?? 0 }
        return pieces[firstIncomplete].segment.resumeOffset
    }

    /// Whether some piece is incomplete and has no owner.
    var hasWaitingWork: Bool { pieces.contains { $0.owner == nil && !$0.segment.isComplete } }

    /// Whether a connection that joined at `now` would get work (``openings(now:)`` is above 0).
    func hasWorkForAnotherConnection(now: ContinuousClock.Instant) -> Bool { openings(now: now) > 0 }

    /// How many connections that joined at `now` would get work: one for each waiting range, and
    /// for each range worth stealing from one per two minimum splits past the point a steal would
    /// take it from (a thief's range is stolen from in turn), or one for a tail worth hedging at the
    /// connections' typical speed when nothing else is left (at the end, on the smaller gains
    /// ``nextWindow(for:now:)`` takes then); none when nothing is. Connections
    /// opened for more would start one after another, find nothing and end (the ones running take
    /// what came back to wait at the end of their windows too). Counting stops at `limit` (more
    /// than any download opens at once).
    func openings(now: ContinuousClock.Instant, limit: Int = 256) -> Int {
        let cutAfter = cutWorthSeconds
        let typical = typicalRate()
        var count = 0
        for index in pieces.indices where count < limit {
            let piece = pieces[index]
            if piece.owner == nil {
                if piece.unclaimed > 0 && withinHorizon(piece.claimed) { count += 1 }
            } else if let (_, at) = stealPoint(index, cutAfter: cutAfter, typical: typical) {
                count += Int(max((piece.end - at) / (2 * settings.minimumSplit), 1))
            }
        }
        if count > 0 { return min(count, limit) }
        // As ``nextWindow(for:now:)`` would give a newcomer: a hedge, or at the end a smaller one.
        let hedge =
            hedgeCandidate(for: -1, now: now) ?? hedgeCandidate(for: -1, now: now, endgame: true)
            ?? overdueCandidate(for: -1, now: now)
        return hedge != nil ? 1 : 0
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
        // Time spent waiting for the horizon is left out of its rate sample: counted, it made every
        // connection of an ordered output look slower than it is, the ones that had waited longest
        // far slower than their peers, and their next windows were hedged within a millisecond.
        if let since = connections[worker]?.waitingSince {
            connections[worker]?.waitingSince = nil
            let waited = now - since
            connections[worker]?.sampleStart += waited
            connections[worker]?.lastProgress += waited
        }
    }

    /// The connection has nothing to fetch until the horizon moves (``isHeldByHorizon``): it waits
    /// from `now`, and the wait is no part of its speed (see ``join(_:now:)``).
    mutating func waitsForHorizon(_ worker: Worker, now: ContinuousClock.Instant) {
        guard connections[worker] != nil, connections[worker]?.waitingSince == nil else { return }
        connections[worker]?.waitingSince = now
    }

    /// The next window for an idle connection: more of its own piece, a waiting piece, half of the
    /// largest remaining range, or the tail of a much slower connection. Nil when nothing is left.
    mutating func nextWindow(for worker: Worker, now: ContinuousClock.Instant) -> (Window, Assignment)? {
        join(worker, now: now)
        if let start = connections[worker]?.piece, let index = index(of: start) {
            // A connection asking again has nothing in flight: what it claimed and did not write (it
            // read ahead of an answer that then failed) goes back, or those bytes would never come.
            if pieces[index].owner == worker {
                pieces[index].claimed = pieces[index].segment.resumeOffset
                if pieces[index].unclaimed > 0, withinHorizon(pieces[index].claimed) {
                    return (openWindow(index, for: worker), .continued)
                }
            }
            drop(worker)
        }
        // The piece the hash waits for comes first: held by a connection far slower than this one
        // would be (and than its peers: on a shared link TCP serves some connections two or three
        // times slower than others, and cutting one of those only closes it), it is hedged; held by
        // one that needs long for the rest while every other byte written meanwhile waits for it
        // too, it is split.
        if let (index, victim, at) = hedgeCandidate(for: worker, now: now, frontierOnly: true),
            Double(pieces[index].unclaimed) / max(currentRate(of: victim, now: now), 1)
                >= settings.frontierSlack,
            waitingIndex() == nil || isFarSlower(victim)
                || backlog(whileWaitingFor: index, heldBy: victim) > Double(settings.frontierBacklog)
        {
            let new = split(index, at: at)
            take(new, for: worker, now: now)
            return (openWindow(new, for: worker), .hedged(from: victim, at: at))
        }
        if let (index, victim, at) = frontierSplit(for: worker) {
            let new = split(index, at: at)
            take(new, for: worker, now: now)
            return (openWindow(new, for: worker), .stolen(from: victim, at: at))
        }
        if var index = waitingIndex() {
            // The piece the hash waits for goes to a connection of known speed: a new one (one in so
            // many is slow) takes the next waiting piece instead, when there is one.
            if index <= firstIncomplete + 1, (connections[worker]?.rate ?? 0) == 0,
                connections.values.contains(where: { $0.rate > 0 }),
                let later = pieces[(index + 1)...].firstIndex(where: {
                    $0.owner == nil && $0.unclaimed > 0 && withinHorizon($0.claimed)
                })
            {
                index = later
            }
            mergeFollowing(index, upTo: windowSize(for: worker))
            take(index, for: worker, now: now)
            return (openWindow(index, for: worker), .waiting)
        }
        if let (index, victim, at) = stealCandidate() {
            let new = split(index, at: at)
            take(new, for: worker, now: now)
            return (openWindow(new, for: worker), .stolen(from: victim, at: at))
        }
        if let (index, victim, at) = hedgeCandidate(for: worker, now: now) {
            let new = split(index, at: at)
            take(new, for: worker, now: now)
            return (openWindow(new, for: worker), .hedged(from: victim, at: at))
        }
        // Work held back by the horizon (an output that takes bytes in order has not taken enough)
        // comes to this connection once the reader takes more: that is no endgame. Taking over the
        // windows of owners about as fast on the endgame's smaller gains only cuts them, and the
        // reader takes nothing sooner: it waits for the piece the hash waits for, which is taken
        // over above, on the same evidence as without a horizon. (With 4 connections and a pipe,
        // 47 endgame hedges and cuts in one 1 GiB run, each cut a reconnect.)
        // A window whose answer is long overdue is taken over all the same: that is evidence, not a
        // smaller gain, and the reader may wait for it.
        if isHeldByHorizon { return takeOverdue(for: worker, now: now) }
        // Nothing else is left for this connection, which would end now: the last tails of slower
        // connections are worth taking on smaller gains (what it would cost is a connection that is
        // idle anyway), so the download ends with its fastest connections, not its slowest.
        if let (index, victim, at) = hedgeCandidate(for: worker, now: now, endgame: true) {
            let new = split(index, at: at)
            take(new, for: worker, now: now)
            return (openWindow(new, for: worker), .hedged(from: victim, at: at))
        }
        if let overdue = takeOverdue(for: worker, now: now) { return overdue }
        if let (index, victim, at) = endgameSplit(for: worker, now: now) {
            let new = split(index, at: at)
            take(new, for: worker, now: now)
            return (openWindow(new, for: worker), .stolen(from: victim, at: at))
        }
        return nil
    }

    /// How many of the next `count` bytes the connection may write; fewer when its end moved closer
    /// (a steal or hedge cut it). The claimed bytes must then be written and committed.
    mutating func claim(_ worker: Worker, count: Int64) -> Int64 {
        guard let start = connections[worker]?.piece, let index = index(of: start),
            pieces[index].owner == worker
        else { return 0 }
        var allowed = min(count, pieces[index].unclaimed)
        while allowed < count, continueInto(after: index, for: worker) {
            allowed = min(count, pieces[index].unclaimed)
        }
        pieces[index].claimed += allowed
        return allowed
    }

    /// Gives back the last `count` bytes the connection claimed and will not write (it read ahead of
    /// its answer and stopped before them): they become unclaimed bytes of its piece again. Never goes
    /// below what it has written.
    mutating func unclaim(_ worker: Worker, count: Int64) {
        guard count > 0, let start = connections[worker]?.piece, let index = index(of: start),
            pieces[index].owner == worker
        else { return }
        pieces[index].claimed = max(pieces[index].claimed - count, pieces[index].segment.resumeOffset)
    }

    /// How many bytes before the end of its current window the connection sends the request for its
    /// next one on the same connection (HTTP/1.1 pipelining), so that the next answer's first byte
    /// follows the current answer's last instead of a round trip later: three request costs at its
    /// speed (the first byte comes one request cost after the request; the rest is a margin for a
    /// speed that grows, in TCP's slow start, or a cost that varies), and at least
    /// ``Settings/minimumHedge``.
    /// Nil where that does not pay or may not: the path's round trip is shorter than
    /// ``Settings/aheadMinimumRoundTrip``, its requests' cost or its speed is not measured
    /// yet, the limit is shared (small windows one request deep keep what a server has queued for a
    /// connection small: a cut or a kill loses it), or a server left a request sent ahead unanswered.
    func aheadLead(for worker: Worker) -> Int64? {
        guard settings.requestsAhead, !settings.sharedLimit, let connection = connections[worker],
            settings.roundTrip.seconds >= settings.aheadMinimumRoundTrip, connection.requestCost > 0,
            connection.steadyRate > 0
        else { return nil }
        return max(Int64(connection.steadyRate * 3 * connection.requestCost), settings.minimumHedge)
    }

    /// The connection's next window, asked for before its current one ends (``aheadLead(for:)``):
    /// more of its piece, right after its current window, sized as any window of it. Its window end
    /// moves there now (a steal splits past it, a cut stops it there as anywhere in a window). Nil
    /// when its piece ends with its current window (its next window comes from elsewhere: a
    /// connection owns one piece at a time, and merging the pieces after its own into it sent the
    /// simulator's 200 ms model from 2.5 to 4.9 s, its last long runs taken over by new connections
    /// still in slow start) or the horizon holds it.
    mutating func windowAhead(for worker: Worker) -> Window? {
        guard let start = connections[worker]?.piece, let index = index(of: start),
            pieces[index].owner == worker
        else { return nil }
        let from = pieces[index].windowEnd
        guard from >= pieces[index].claimed, from < pieces[index].end, withinHorizon(from) else { return nil }
        let to = min(pieces[index].end, from + windowSize(for: worker), horizon ?? Int64.max)
        pieces[index].windowEnd = to
        connections[worker]?.requestEnd = from
        return Window(piece: start, range: from..<to)
    }

    /// The connection's current answer ended, and the answer to the request it sent ahead for
    /// `window` comes next: true when that window is still its own (its piece, from its first byte not
    /// written), false when a steal or a cut took it meanwhile (that answer is then not its to write).
    mutating func takeAhead(_ worker: Worker, _ window: Window, now: ContinuousClock.Instant) -> Bool {
        guard connections[worker]?.piece == window.piece, let index = index(of: window.piece),
            pieces[index].owner == worker, pieces[index].claimed == window.range.lowerBound,
            pieces[index].segment.resumeOffset == window.range.lowerBound, pieces[index].unclaimed > 0
        else { return false }
        pieces[index].windowEnd = min(
            max(pieces[index].windowEnd, window.range.upperBound), pieces[index].end)
        connections[worker]?.awaitingAnswer = true
        connections[worker]?.windowSince = nil
        connections[worker]?.lastProgress = now
        connections[worker]?.requestEnd = nil
        return true
    }

    /// A server left a request sent ahead unanswered: no more are sent in this download.
    mutating func stopRequestsAhead() {
        settings.requestsAhead = false
    }

    /// A connection that already holds an answer for bytes `0..<end` (the probe's opening GET) takes
    /// the first piece, with its window reaching to `end`: it goes on into the pieces after it while
    /// nobody has started on them (see ``claim(_:count:)``). Nil when the first piece is taken or has
    /// bytes already.
    mutating func adopt(
        _ worker: Worker, end: Int64, requestCost: Duration, now: ContinuousClock.Instant
    ) -> Window? {
        guard let first = pieces.first, first.owner == nil, first.claimed == first.start,
            first.segment.written == 0, end > first.start
        else { return nil }
        join(worker, now: now)
        take(0, for: worker, now: now)
        pieces[0].windowEnd = end
        pieces[0].opening = true
        connections[worker]?.requestCost = requestCost.seconds
        return Window(piece: first.start, range: first.start..<end)
    }

    /// The owner of piece `index` reads an answer that runs on past the piece's end (its window
    /// reaches further): the next piece joins its piece when nobody has started on it, that is when it
    /// has no owner, or one whose request still waits for its answer. That owner's piece is gone, and
    /// it stops as soon as its answer comes: the bytes it waits for are arriving here now (a server
    /// that answers one request at a time keeps it waiting behind this very answer). Returns whether
    /// the piece grew.
    private mutating func continueInto(after index: Int, for worker: Worker) -> Bool {
        let piece = pieces[index]
        guard piece.windowEnd > piece.end, index + 1 < pieces.count else { return false }
        let next = pieces[index + 1]
        guard next.segment.written == 0, next.claimed == next.start, withinHorizon(next.start) else {
            return false
        }
        if let owner = next.owner {
            guard owner != worker, connections[owner]?.awaitingAnswer == true else { return false }
        }
        if next.end > piece.windowEnd { _ = split(index + 1, at: piece.windowEnd) }
        if let owner = pieces[index + 1].owner { connections[owner]?.piece = nil }
        pieces[index].segment.end = pieces[index + 1].end
        pieces.remove(at: index + 1)
        // A piece that was complete has bytes to come again: the prefix ends in it.
        firstIncomplete = min(firstIncomplete, index)
        return true
    }

    /// Records `count` claimed bytes as written. Returns true when the frontier moved.
    @discardableResult
    mutating func commit(_ worker: Worker, count: Int64, now: ContinuousClock.Instant) -> Bool {
        guard connections[worker]?.piece != nil else { return false }
        arrived(worker, count: count, now: now)
        return written(worker, count: count)
    }

    /// Claims up to `count` bytes that arrived in an answer whose end is not proven yet (a request
    /// went ahead on its connection): they count as the connection's progress and speed now, as any
    /// bytes that arrive, and are written, but only ``commitHeld(_:count:)`` commits them. Returns
    /// how many may be written (fewer when the range was cut).
    mutating func hold(_ worker: Worker, count: Int64, now: ContinuousClock.Instant) -> Int64 {
        let allowed = claim(worker, count: count)
        if allowed > 0 { arrived(worker, count: allowed, now: now) }
        return allowed
    }

    /// Commits `count` held bytes (``hold(_:count:now:)``) once the next answer proved where theirs
    /// ended. Returns true when the frontier moved.
    @discardableResult
    mutating func commitHeld(_ worker: Worker, count: Int64) -> Bool {
        guard connections[worker]?.piece != nil else { return false }
        return written(worker, count: count)
    }

    /// `count` claimed bytes are in the file: the piece's written bytes grow.
    private mutating func written(_ worker: Worker, count: Int64) -> Bool {
        guard let start = connections[worker]?.piece, let index = index(of: start) else { return false }
        precondition(pieces[index].segment.written + count <= pieces[index].claimed - pieces[index].start)
        pieces[index].segment.written += count
        writtenBytes += count
        guard index == firstIncomplete else { return false }
        advanceFrontier()
        return true
    }

    /// `count` bytes came on the connection now: its progress, and its speed.
    private mutating func arrived(_ worker: Worker, count: Int64, now: ContinuousClock.Instant) {
        guard var connection = connections[worker] else { return }
        connection.bytes += count
        connection.largestCommit = max(connection.largestCommit, count)
        connection.lastProgress = now
        connection.awaitingAnswer = false
        if connection.windowSince == nil {
            connection.windowSince = now
            connection.windowBytes = connection.bytes
        }
        let elapsed = (now - connection.sampleStart).seconds
        if elapsed >= settings.rateSample.seconds {
            let instant = Double(connection.bytes - connection.sampleBytes) / elapsed
            // Quick to fall, slow to rise: a burst (nginx's limit_rate lets every request send a
            // second's worth at once) must not make a slow connection look fast for long, since
            // windows and retirements are sized by it.
            connection.rate =
                connection.rate == 0
                ? instant
                : instant < connection.rate
                    ? 0.25 * connection.rate + 0.75 * instant : 0.5 * connection.rate + 0.5 * instant
            connection.latestRate = instant
            connection.sampleStart = now
            connection.sampleBytes = connection.bytes
        }
        connections[worker] = connection
    }

    /// The connection fetches from source `group` (of several) from now on.
    mutating func setGroup(_ worker: Worker, _ group: Int) {
        connections[worker]?.group = group
    }

    /// A request of the connection got its first byte `delay` after it was sent.
    mutating func recordFirstByte(_ worker: Worker, after delay: Duration) {
        guard var connection = connections[worker] else { return }
        let seconds = delay.seconds
        connection.requestCost =
            connection.requestCost == 0 ? seconds : 0.7 * connection.requestCost + 0.3 * seconds
        connection.awaitingAnswer = false
        connections[worker] = connection
    }

    /// A window whose answer is long overdue (``overdueCandidate(for:now:)``), taken over by
    /// `worker`.
    private mutating func takeOverdue(
        for worker: Worker, now: ContinuousClock.Instant
    ) -> (Window, Assignment)? {
        guard let (index, victim, at) = overdueCandidate(for: worker, now: now) else { return nil }
        let new = at > pieces[index].start ? split(index, at: at) : takeOver(index)
        take(new, for: worker, now: now)
        return (openWindow(new, for: worker), .hedged(from: victim, at: at))
    }

    /// The connection stops taking part (it failed, gave up or was dropped): its unfinished range
    /// waits for another connection, from its first unwritten byte.
    mutating func leave(_ worker: Worker) {
        drop(worker)
        if let rate = connections[worker]?.rate, rate > 0 {
            departedRates.append(rate)
            if departedRates.count > Self.departedMemory { departedRates.removeFirst() }
        }
        connections[worker] = nil
    }

    /// Connections that received nothing for the stall timeout while owning a range, or that have
    /// been far slower than their peers for the slow grace. Their ranges are cut at what they claimed
    /// and wait for others; the caller closes their sockets, and they start over on new ones.
    mutating func stalledConnections(now: ContinuousClock.Instant) -> [Worker] {
        var stalled: [Worker] = []
        let overall = typicalRate()
        let measuredOverall = connections.values.count { $0.rate > 0 }
        for (worker, connection) in connections.sorted(by: { $0.key < $1.key }) {
            // Peers are the connections of the same source, when there are several.
            var typical = overall
            var measured = measuredOverall
            if let group = connection.group {
                let rates = connections.values.filter { $0.group == group && $0.rate > 0 }.map(\.rate)
                typical = Self.median(rates)
                measured = rates.count
            }
            guard connection.piece != nil else {
                connections[worker]?.slowSince = nil
                continue
            }
            let silent = now - connection.lastProgress >= settings.stallTimeout
            // One still waiting for its answer is not slow (yet): only the stall timeout applies.
            let slow =
                measured >= 3 && !connection.awaitingAnswer && connection.rate > 0
                && connection.rate * settings.slowFactor < typical
            connections[worker]?.slowSince = slow ? (connection.slowSince ?? now) : nil
            let slowTooLong = slow && now - (connection.slowSince ?? now) >= settings.slowGrace
            // A silent one that claimed all of its piece (a lease reaching the piece's end, see
            // ``ClaimLease``) has nothing to give back, and is closed all the same: it gives back
            // what it claimed and did not write, and asks again.
            guard silent || slowTooLong,
                giveBackUnclaimed(of: worker) || (silent && holdsClaimedUnwrittenTail(worker))
            else { continue }
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
    /// has asked for when that is soon done (within half a second at its rate, or a rest small enough
    /// to read off rather than close: the server is sending those bytes already; cutting them would
    /// waste what is on the way), else what comes in the next quarter of a second, and the rest of its
    /// range waits for the others. (With a floor of 2 MiB instead, 60 connections a capped link had
    /// just shown to be too many went on sharing it for two more seconds, each finishing its window
    /// at a sixtieth of the link.)
    mutating func release(_ worker: Worker) {
        guard let start = connections[worker]?.piece, let index = index(of: start),
            pieces[index].owner == worker
        else { return }
        // Before its rate is known it keeps what it has claimed: it is leaving because fewer do as
        // well, and connections that just joined a shared limit each get a sliver of it. (Their
        // share of what the measured ones bring kept them a quarter of a second longer, and the
        // few left, measured meanwhile, looked as if fewer had lost.)
        // A window asked for ahead is not its to finish: it goes back with the rest.
        let rate = connections[worker]?.steadyRate ?? 0
        let requestEnd = min(pieces[index].windowEnd, connections[worker]?.requestEnd ?? Int64.max)
        let rest = requestEnd - pieces[index].claimed
        let soon = max(SegmentFetcher.drainLimit, Int64(rate * 0.5))
        let keep =
            rest <= soon
            ? max(pieces[index].claimed, requestEnd)
            : pieces[index].claimed + Int64(rate * 0.25)
        guard keep > pieces[index].claimed || pieces[index].claimed > pieces[index].segment.resumeOffset
        else {
            giveBackUnclaimed(of: worker)
            return
        }
        connections[worker]?.requestEnd = nil
        if keep < pieces[index].end {
            _ = split(index, at: keep)
        } else {
            // A leaving connection goes on into no other piece.
            pieces[index].windowEnd = min(pieces[index].windowEnd, pieces[index].end)
        }
    }

    /// Whether the worker owns a piece it has claimed to the end and not written to the end.
    private func holdsClaimedUnwrittenTail(_ worker: Worker) -> Bool {
        guard let start = connections[worker]?.piece, let index = index(of: start),
            pieces[index].owner == worker
        else { return false }
        return pieces[index].unclaimed == 0 && !pieces[index].segment.isComplete
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
            pieces[index].opening = false
            pieces[index].windowEnd = pieces[index].claimed
            connections[worker]?.piece = nil
        } else {
            // Bytes may still be on their way to the file: the owner keeps exactly those.
            _ = split(index, at: pieces[index].claimed)
        }
        return true
    }

    // MARK: Decisions

    /// The in-flight or waiting range with the most unclaimed bytes, split at its midpoint, when the
    /// upper half is at least the minimum split. The split stays past its owner's current window
    /// unless the owner would need more than ``Settings/stealCutSeconds`` for the rest of that window
    /// and is far slower than its peers (or would need five times that): then the window itself is
    /// cut, and the owner stops at the cut (a slow connection holding a large window is the tail
    /// everyone else would wait for). A cut closes the owner's connection, and the bytes the server
    /// had queued for it are lost: between connections of about one speed it only costs.
    private func stealCandidate() -> (index: Int, victim: Worker, at: Int64)? {
        var best: (index: Int, victim: Worker, at: Int64, upper: Int64)?
        let cutAfter = cutWorthSeconds
        let typical = typicalRate()
        for index in pieces.indices {
            guard let (victim, at) = stealPoint(index, cutAfter: cutAfter, typical: typical) else { continue }
            let upper = pieces[index].end - at
            if best == nil || upper > best!.upper { best = (index, victim, at, upper) }
        }
        return best.map { ($0.index, $0.victim, $0.at) }
    }

    /// Where piece `index` would be split by a steal (see ``stealCandidate()``), if it is worth one.
    /// `cutAfter` is ``cutWorthSeconds`` and `typical` ``typicalRate()``, worked out once by the caller.
    private func stealPoint(_ index: Int, cutAfter: Double, typical: Double) -> (victim: Worker, at: Int64)? {
        let piece = pieces[index]
        guard let owner = piece.owner, piece.unclaimed > 0 else { return nil }
        let middle = piece.claimed + (piece.unclaimed + 1) / 2
        var at = max(middle, piece.windowEnd)
        // The probe's answer, reaching past its piece, is not cut before its owner's speed is
        // measured: it may well be done before any other connection could start (an object store's
        // one answer at a time). Worth a cut: the owner needs long for the rest of its window, by the
        // request cost a new request has to pay.
        if at > middle, let rate = connections[owner].map(\.steadyRate), rate > 0 || !piece.opening {
            let seconds = Double(min(piece.windowEnd, piece.end) - piece.claimed) / max(rate, 1)
            if (seconds > cutAfter && isFarSlower(owner, typical: typical)) || seconds > 5 * cutAfter {
                at = middle
            }
        }
        guard piece.end - at >= settings.minimumSplit, withinHorizon(at) else { return nil }
        return (owner, at)
    }

    /// The upper half of the first incomplete piece's unclaimed bytes, when its owner needs so long for
    /// them that the rest of the download writes more than ``Settings/frontierBacklog`` meanwhile (bytes
    /// the hash can only read once the piece is done).
    private func frontierSplit(for worker: Worker) -> (index: Int, victim: Worker, at: Int64)? {
        guard firstIncomplete < pieces.count else { return nil }
        let piece = pieces[firstIncomplete]
        // Only a connection of known speed, at least the owner's, takes half of what the hash waits for.
        guard let owner = piece.owner, owner != worker, piece.unclaimed >= 2 * settings.minimumHedge,
            let mine = connections[worker]?.steadyRate, mine > 0
        else { return nil }
        // An owner not measured yet (it just reconnected) is taken to be typical.
        let measured = connections[owner]?.steadyRate ?? 0
        let rate = measured > 0 ? measured : typicalRate()
        guard rate > 0, mine >= rate else { return nil }
        let seconds = Double(piece.unclaimed) / rate
        // A cut costs the owner its connection and the thief a request: worth it only for long waits.
        guard backlog(unclaimed: piece.unclaimed, ownerRate: rate) > Double(settings.frontierBacklog),
            seconds > cutWorthSeconds
        else { return nil }
        let at = piece.claimed + (piece.unclaimed + 1) / 2
        guard withinHorizon(at), at > piece.claimed, at < piece.end else { return nil }
        return (firstIncomplete, owner, at)
    }

    /// A tail worth fetching again: its owner's speed now (``Connection/currentRate(now:settle:)``)
    /// would take `hedgeFactor` times longer than this connection's (or its peers' typical speed,
    /// for a new one). The owner keeps only what it will fetch in the next `hedgeGrace` seconds and
    /// stops there.
    ///
    /// With `frontierOnly`, only the first incomplete piece is looked at: the one the hash waits for,
    /// worth taking over before any waiting work, since every byte after it waits for it too.
    private func hedgeCandidate(
        for worker: Worker, now: ContinuousClock.Instant, frontierOnly: Bool = false, endgame: Bool = false
    ) -> (index: Int, victim: Worker, at: Int64)? {
        let myRate = expectedRate(of: worker)
        guard myRate > 0 else { return nil }
        // The owner keeps what it fetches while this connection's request waits for its answer:
        // four times its measured cost, within a quarter of `hedgeGrace` and all of it (the whole
        // grace for a connection whose requests are not measured yet, a new one among them).
        let myCost = connections[worker]?.requestCost ?? 0
        let myGrace =
            myCost > 0
            ? min(max(4 * myCost, settings.hedgeGrace / 4), settings.hedgeGrace) : settings.hedgeGrace
        var best: (index: Int, victim: Worker, at: Int64, gain: Double)?
        let candidates =
            frontierOnly ? firstIncomplete..<min(firstIncomplete + 1, pieces.count) : pieces.indices
        for index in candidates {
            let piece = pieces[index]
            guard let owner = piece.owner, owner != worker, piece.unclaimed > 0 else { continue }
            let measured = currentRate(of: owner, now: now)
            // Not measured yet, judged by its bytes so far: non-zero only when far slower.
            let victimRate = measured == 0 && endgame ? provisionalRate(of: owner, now: now) : measured
            guard victimRate > 0 else { continue }
            // The piece the hash waits for: its owner keeps less, and the gain may be smaller, since
            // every byte after it waits too.
            let relaxed = frontierOnly || endgame
            let grace = relaxed ? settings.hedgeGrace / 4 : myGrace
            let keep = Int64((victimRate * grace).rounded(.up))
            var at = min(piece.claimed + keep, piece.end)
            // At the very end a tail too small to split is taken whole from an owner far slower than
            // its peers (the ones that left count: the owner is often the last one): the download's
            // last bytes otherwise wait for its slowest connection (75 kB for 0.5 s on a shaped
            // straggler, every other connection done). Never from one only briefly behind (a busy
            // machine starves a fast one for a moment): cutting that one would drop what its socket
            // already holds.
            let whole =
                endgame && piece.end - at < settings.minimumHedge && piece.claimed > piece.start
                && (measured == 0 || isFarSlower(owner, typical: newcomerRate()))
            if whole { at = piece.claimed }
            let tail = piece.end - at
            guard tail >= (whole ? 1 : settings.minimumHedge), withinHorizon(at) else { continue }
            let victimSeconds = Double(piece.unclaimed) / victimRate
            // Taken whole, the owner keeps nothing to fetch meanwhile: this connection's wait is its
            // request's cost alone (a round trip or two for a new one), not the owner's grace. With
            // the grace, a shaped straggler's last 63 kB (63 ms at 1 MB/s) were left to it while
            // every other connection had finished, and a stall there (a retransmission's timeout)
            // held the download's end for 160 ms.
            let cost = myCost > 0 ? myCost : typicalRequestCost
            let wait = whole ? max(cost, 2 * settings.roundTrip.seconds) : grace
            let mySeconds = Double(tail) / myRate + wait
            // A tail taken whole from an owner far slower than its peers, with nothing else left to
            // fetch, needs only to beat twice the request it costs: it is small, and the owner is a
            // straggler (a 1 MB/s owner's last 21 kB, due in 21 ms, stalled for 0.2 s while the
            // usual gain of 50 ms kept them from anyone else).
            let minimumGain =
                whole ? 2 * wait : relaxed ? settings.hedgeMinimumGain / 4 : settings.hedgeMinimumGain
            let factor = endgame ? min(settings.hedgeFactor, 1.5) : settings.hedgeFactor
            guard victimSeconds > factor * mySeconds, victimSeconds - mySeconds >= minimumGain
            else { continue }
            let gain = victimSeconds - mySeconds
            if best == nil || gain > best!.gain { best = (index, owner, at, gain) }
        }
        return best.map { ($0.index, $0.victim, $0.at) }
    }

    /// At the end, with nothing else left to fetch, what an owner not measured yet shows when it is
    /// far slower than its peers (``Settings/slowFactor``): the bytes it brought since its first one,
    /// over that time, once that is long enough to tell (as a window settles). 0 otherwise: before
    /// that, while its first answer is still on its way (a server that answers one request at a time
    /// keeps it waiting, and a second request would only queue behind it), and for one merely still
    /// in its slow start (cutting an owner of about its peers' speed throws away what its socket
    /// holds, and a resumed download's connections all start unmeasured at once). A connection
    /// opened at the end to take over a tail can land on a slow port (a shaped straggler's 1 MB/s,
    /// or stuck behind a full queue): unmeasured, it kept a 389 kB window for a quarter of a second,
    /// every other connection done, until a rate sample could judge it.
    private func provisionalRate(of worker: Worker, now: ContinuousClock.Instant) -> Double {
        guard let connection = connections[worker], connection.rate == 0, !connection.awaitingAnswer,
            let since = connection.windowSince
        else { return 0 }
        let elapsed = (now - since).seconds
        guard elapsed >= settleSeconds(requestCost: typicalRequestCost) else { return 0 }
        let rate = max(Double(connection.bytes - connection.windowBytes) / elapsed, 1)
        return rate * settings.slowFactor <= newcomerRate() ? rate : 0
    }

    /// At the end, with nothing else left to fetch: a window whose request has waited for its answer
    /// far longer than requests here take (four times their typical cost, and at least as long as a
    /// window takes to settle), or whose answer has brought nothing for a second as well, taken over
    /// (from its first byte not claimed) by a connection that would bring it in less than two thirds
    /// of the time the owner is expected to need still. Nothing says when more comes: the owner is
    /// expected to wait as long again as it has waited, then bring the bytes at its speed (its
    /// peers' typical one, unmeasured). A hedge judges an owner by its bytes, and this one has none:
    /// on a shaped link, a straggler cut and reconnected landed behind a slow queue, and its 72 kB
    /// window came 0.47 s later, 0.28 s after every other byte; an answer that stopped (a server
    /// stalled it) kept its last 10 kB, the grace a hedge had left it, for the whole stall timeout.
    private func overdueCandidate(
        for worker: Worker, now: ContinuousClock.Instant
    ) -> (index: Int, victim: Worker, at: Int64)? {
        let myRate = expectedRate(of: worker)
        guard myRate > 0 else { return nil }
        let typicalCost = typicalRequestCost
        let myCost =
            connections[worker].map { $0.requestCost > 0 ? $0.requestCost : typicalCost } ?? typicalCost
        let wait = max(myCost, 2 * settings.roundTrip.seconds)
        let overdueAfter = max(4 * typicalCost, settleSeconds(requestCost: typicalCost))
        var best: (index: Int, victim: Worker, at: Int64, gain: Double)?
        for index in pieces.indices {
            let piece = pieces[index]
            guard let owner = piece.owner, owner != worker, piece.unclaimed > 0, withinHorizon(piece.claimed),
                let connection = connections[owner]
            else { continue }
            let waited = (now - connection.lastProgress).seconds
            guard waited >= (connection.awaitingAnswer ? overdueAfter : max(overdueAfter, 1)) else {
                continue
            }
            let ownerRate = expectedRate(of: owner)
            let ownerSeconds = waited + Double(piece.unclaimed) / max(ownerRate, 1)
            let mySeconds = Double(piece.unclaimed) / myRate + wait
            let gain = ownerSeconds - mySeconds
            guard ownerSeconds > 1.5 * mySeconds, gain >= 2 * wait else { continue }
            if best == nil || gain > best!.gain { best = (index, owner, piece.claimed, gain) }
        }
        return best.map { ($0.index, $0.victim, $0.at) }
    }

    /// The endgame between connections of about one speed: a connection that would end now takes the
    /// upper half of the range that needs longest, when halving it saves more than the half's request
    /// costs. A hedge pays only against a slower owner, and a steal only splits ranges of two
    /// ``Settings/minimumSplit``s, so on a link that holds every connection to one rate the last
    /// ranges (up to 2 MiB at 5 MB/s: 0.4 s) were carried by one connection each while the others
    /// ended. Each half is at least ``Settings/endgameMinimumHalf`` and the split saves at least
    /// ``Settings/endgameMinimumGain``: with halves of 256 KiB and 50 ms at least, a resumed
    /// download's last ranges (460 kB windows at 4.7 MB/s, 0.1 s each) went unsplit, and its 64
    /// connections ended over 0.11 s where their work, shared out, needed 0.05 s.
    private func endgameSplit(
        for worker: Worker, now: ContinuousClock.Instant
    ) -> (index: Int, victim: Worker, at: Int64)? {
        let myRate = expectedRate(of: worker)
        guard myRate > 0 else { return nil }
        let shared = settings.sharedLimit
        let floor =
            shared ? max(settings.endgameMinimumHalf, settings.minimumSplit / 4) : settings.endgameMinimumHalf
        var longest: (index: Int, owner: Worker, rate: Double, seconds: Double)?
        for index in pieces.indices {
            let piece = pieces[index]
            guard let owner = piece.owner, owner != worker, piece.unclaimed >= 2 * floor else { continue }
            let rate = currentRate(of: owner, now: now)
            guard rate > 0 else { continue }
            let seconds = Double(piece.unclaimed) / rate
            if longest == nil || seconds > longest!.seconds { longest = (index, owner, rate, seconds) }
        }
        guard let longest else { return nil }
        let piece = pieces[longest.index]
        let at = piece.claimed + (piece.unclaimed + 1) / 2
        guard piece.end - at >= floor, withinHorizon(at) else { return nil }
        let myCost = connections[worker].map { $0.requestCost > 0 ? $0.requestCost : typicalRequestCost } ?? 0
        let ownerSeconds = Double(at - piece.claimed) / longest.rate
        let mySeconds = Double(piece.end - at) / myRate + myCost
        let gain = longest.seconds - max(ownerSeconds, mySeconds)
        let minimumGain = shared ? 2 * settings.endgameMinimumGain : settings.endgameMinimumGain
        guard gain >= max(minimumGain, 2 * myCost) else { return nil }
        return (longest.index, longest.owner, at)
    }

    /// How long an owner must still need for the rest of its window before cutting it pays: the cut
    /// costs it its connection (a new one has to open and leave TCP's slow start) and the thief a
    /// request. At least ``Settings/stealCutSeconds``, four request costs, and ten round trips.
    private var cutWorthSeconds: Double {
        max(settings.stealCutSeconds, 4 * typicalRequestCost, 10 * settings.roundTrip.seconds)
    }

    /// The connection's speed at `now` (``Connection/currentRate(now:settle:)``) while its window
    /// still has bytes to come; its measured speed between windows. 0 if unmeasured.
    private func currentRate(of worker: Worker, now: ContinuousClock.Instant) -> Double {
        guard let connection = connections[worker] else { return 0 }
        guard let piece = piece(of: worker), piece.owner == worker, piece.claimed < piece.windowEnd else {
            return connection.rate
        }
        return connection.currentRate(now: now, settle: settleSeconds(requestCost: connection.requestCost))
    }

    /// How long a window must run to show a connection's speed: long enough to be more than the noise
    /// of a request's start (its cost, TCP's round trips).
    private func settleSeconds(requestCost: Double) -> Double {
        max(settings.windowSettle.seconds, 2 * requestCost, 4 * settings.roundTrip.seconds)
    }

    /// The median measured cost of a request (seconds to its first byte), 0 if none is measured.
    var typicalRequestCost: Double {
        Self.median(connections.values.map(\.requestCost).filter { $0 > 0 })
    }

    /// The bytes the other connections write while `owner` fetches the rest of piece `index` at its
    /// measured speed: bytes the hash can read only once that piece is done.
    private func backlog(whileWaitingFor index: Int, heldBy owner: Worker) -> Double {
        guard let rate = connections[owner]?.steadyRate, rate > 0 else { return 0 }
        return backlog(unclaimed: pieces[index].unclaimed, ownerRate: rate)
    }

    /// The bytes the other connections write while an owner at `ownerRate` fetches `unclaimed` bytes.
    private func backlog(unclaimed: Int64, ownerRate: Double) -> Double {
        let aggregate = connections.values.reduce(0) { $0 + $1.rate }
        return Double(unclaimed) / ownerRate * max(aggregate - ownerRate, 0)
    }

    /// Whether `worker` runs ``Settings/slowFactor`` times slower than the typical connection.
    private func isFarSlower(_ worker: Worker, typical: Double? = nil) -> Bool {
        guard let connection = connections[worker], !connection.awaitingAnswer else { return false }
        let rate = connection.steadyRate
        return rate > 0 && rate * settings.slowFactor <= (typical ?? typicalRate())
    }

    /// The median measured speed of the connections, 0 if none is measured.
    private func typicalRate() -> Double {
        Self.median(connections.values.map(\.rate).filter { $0 > 0 })
    }

    /// What a connection not measured yet is expected to reach: the median speed of the measured
    /// connections and of the latest ones that left.
    private func newcomerRate() -> Double {
        Self.median(connections.values.map(\.rate).filter { $0 > 0 } + departedRates)
    }

    /// What `worker` is expected to fetch at: its measured speed, or a newcomer's
    /// (``newcomerRate()``) while it has none.
    private func expectedRate(of worker: Worker) -> Double {
        connections[worker].flatMap { $0.rate > 0 ? $0.rate : nil } ?? newcomerRate()
    }

    /// The middle value (the upper one of an even count), 0 of none.
    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
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
    /// has none), or more when its requests cost more than ``Settings/requestCostShare`` of that
    /// (the cost is then that share of a request), within the initial and maximum window.
    private func windowSize(for worker: Worker) -> Int64 {
        let own = connections[worker]?.steadyRate ?? 0
        let typical = own > 0 ? own : typicalRate()
        let rate = typical > 0 ? typical : settings.priorRate
        guard rate > 0 else { return settings.initialWindow }
        let cost = connections[worker].map(\.requestCost) ?? 0
        let shared = settings.sharedLimit
        let share = min(max(shared ? settings.sharedRequestCostShare : settings.requestCostShare, 0.001), 1)
        let costSeconds = cost * (1 - share) / share
        let seconds = max(shared ? settings.sharedWindowSeconds : settings.windowSeconds, costSeconds)
        let wanted = Int64(min(rate * seconds, Double(settings.maximumWindow)))
        let smallest =
            shared ? min(settings.sharedMinimumWindow, settings.initialWindow) : settings.initialWindow
        let window = min(max(wanted, smallest), settings.maximumWindow)
        // Near the end no window of a measured connection outlasts the download as a whole (the rest
        // at every connection's speed together): one far slower than its peers, a slow mirror, would
        // otherwise hold the last bytes long after the others are done, in a window too short to be
        // worth hedging. Never below what the request's cost asks for.
        guard own > 0 else { return window }
        let aggregate = connections.values.reduce(0) { $0 + $1.steadyRate }
        guard aggregate > 0 else { return window }
        let left = pieces.reduce(Int64(0)) { $0 + $1.unclaimed }
        let finish = Double(left) / aggregate
        guard finish < seconds else { return window }
        let endgame = Int64(own * max(finish, costSeconds, 0.05))
        return endgame < window ? max(endgame, settings.minimumHedge) : window
    }

    /// Under a horizon, a window is at most its connection's share of the work within it: the bytes
    /// nobody has claimed below the horizon over the connections fetching (those with a piece, and
    /// this one; at least ``Settings/minimumSplit``, or a request would cost more than it brings).
    /// Counting the ones waiting for the horizon too made windows small enough that each answer's
    /// corked last packet (nginx `tcp_nopush`) cost `-n 64` a third of its time. The horizon moves
    /// as the reader takes bytes, and the first connection to wake took all it released, up to a
    /// window of a second of its speed; the others, waking a fraction of a millisecond later, cut
    /// it at once (each cut a closed connection and a new one: 50 in a 1 GiB run to a pipe).
    private func horizonShare(for worker: Worker) -> Int64 {
        guard let horizon else { return Int64.max }
        let within = pieces.reduce(Int64(0)) { $0 + max(0, min($1.end, horizon) - $1.claimed) }
        let working = connections.count { $0.key != worker && $0.value.piece != nil } + 1
        return max(within / Int64(working), settings.minimumSplit)
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
        let size = min(windowSize(for: worker), horizonShare(for: worker))
        connections[worker]?.awaitingAnswer = true
        connections[worker]?.windowSince = nil
        connections[worker]?.requestEnd = nil
        let from = pieces[index].claimed
        let to = min(pieces[index].end, from + size, horizon ?? Int64.max)
        pieces[index].windowEnd = to
        return Window(piece: pieces[index].start, range: from..<to)
    }

    private mutating func take(_ index: Int, for worker: Worker, now: ContinuousClock.Instant) {
        pieces[index].owner = worker
        pieces[index].opening = false
        connections[worker]?.piece = pieces[index].start
        connections[worker]?.lastProgress = now
    }

    /// Ends a connection's ownership: unclaimed-but-unwritten bytes return to the piece.
    private mutating func drop(_ worker: Worker) {
        guard let start = connections[worker]?.piece, let index = index(of: start) else { return }
        connections[worker]?.piece = nil
        guard pieces[index].owner == worker else { return }
        pieces[index].owner = nil
        pieces[index].opening = false
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

    /// Piece `index`, none of whose bytes are written or claimed, leaves its owner (which stops: it
    /// may claim nothing more) and waits for another. Returns `index`.
    private mutating func takeOver(_ index: Int) -> Int {
        precondition(pieces[index].claimed == pieces[index].start)
        if let owner = pieces[index].owner { giveBackUnclaimed(of: owner) }
        return index
    }

    /// Bytes `range`, every one of them written, are to be fetched again (they did not verify): they
    /// become one waiting piece of their own, and the frontier goes back to its start. The pieces
    /// around it keep what lies outside the range; a connection that still owned one of the complete
    /// pieces inside it owns nothing now, which it never writes into anyway.
    mutating func reopen(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        var result: [Piece] = []
        result.reserveCapacity(pieces.count + 2)
        for piece in pieces {
            if piece.end <= range.lowerBound || piece.start >= range.upperBound {
                result.append(piece)
                continue
            }
            precondition(piece.segment.isComplete, "only written bytes are fetched again")
            if piece.start < range.lowerBound {
                var head = piece
                head.segment.end = range.lowerBound
                head.segment.written = range.lowerBound - piece.start
                head.claimed = range.lowerBound
                head.windowEnd = min(head.windowEnd, range.lowerBound)
                result.append(head)
            }
            if result.last.map({ $0.end <= range.lowerBound }) ?? true {
                result.append(
                    Piece(
                        segment: Segment(start: range.lowerBound, end: range.upperBound),
                        claimed: range.lowerBound,
                        owner: nil, windowEnd: range.lowerBound))
            }
            if piece.end > range.upperBound {
                result.append(
                    Piece(
                        segment: Segment(
                            start: range.upperBound, end: piece.end, written: piece.end - range.upperBound),
                        claimed: piece.end, owner: nil, windowEnd: piece.end))
            }
        }
        pieces = result
        writtenBytes -= range.upperBound - range.lowerBound
        firstIncomplete = 0
        advanceFrontier()
    }

    private mutating func advanceFrontier() {
        while firstIncomplete < pieces.count, pieces[firstIncomplete].segment.isComplete {
            firstIncomplete += 1
        }
    }
}
