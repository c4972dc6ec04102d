/// The scheduler's state as a pure value, and its picker: which connection fetches which window next.
/// It holds the ownership map (``PieceMap``: the pieces, who owns which, the complete prefix) and the
/// connections' speeds (``ConnectionSpeeds``), and decides from both. Events go in (a connection is
/// idle, claimed and wrote bytes, failed, time passed), decisions come out (fetch this window, steal
/// that range, drop that connection). No I/O and no clock of its own: tests drive every transition.
///
/// Ownership rules that keep a byte from being written twice: a segment has at most one owner; the
/// owner writes `[written, claimed)` and nobody else touches that range; a split or a cut never moves
/// a segment's end below its `claimed` offset, and the owner stops exactly at the (possibly new) end.
package struct SegmentTable: Sendable, Equatable {
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
        /// A connection that brought nothing for this many of its usual gaps between reads, while the
        /// server shows it delivers, went silent (``isSilent(_:_:peersRate:now:)``): its range is
        /// taken over. Eight: a connection that shares a link with others gets its bytes in bursts.
        var silentGaps: Double = 8
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
    /// the connections its next steps may open (four times as many: a step doubles them, or multiplies
    /// them by eight when the newcomers cost the others nothing; sharing for the maximum at once made
    /// the simulator's `limit_rate` model slower, and sharing for eight times as many changed no
    /// model): the first four would otherwise join pieces
    /// into shares of a quarter of the file each, which the newcomers then steal, cutting the owners'
    /// requests and reconnecting them (on a link that limits each connection, into TCP's slow start,
    /// and into whatever speed the new port gets).
    static func tuned(_ settings: Settings, to controller: ConnectionController) -> Settings {
        tuned(settings, to: controller.tuning)
    }

    /// What the windows follow of the connection count (``tuned(_:to:)``).
    struct Tuning: Sendable, Equatable {
        /// The connections to have now, and the most there may be.
        var count: Int
        var maximum: Int
        /// Whether the count is still rising, and by what factor its next step may multiply it.
        var rising: Bool
        var ahead: Int
        /// The download's throughput, in bytes per second.
        var throughput: Double
        /// Whether the limit was found shared.
        var shared: Bool
    }

    static func tuned(_ settings: Settings, to tuning: Tuning) -> Settings {
        var settings = settings
        let count = max(tuning.rising ? min(tuning.maximum, tuning.count * tuning.ahead) : tuning.count, 1)
        settings.expectedConnections = count
        settings.maximumMergedPiece = max(4 << 20, aheadBudget(throughput: tuning.throughput) / Int64(count))
        settings.sharedLimit = tuning.shared
        return settings
    }

    /// How far all windows together may reach ahead of the hashed prefix: 256 MiB, or two seconds of
    /// the download's throughput where that is more (a fast download with long round trips needs large
    /// windows to keep each request's cost small; a hash that falls behind shows at the end as the tail
    /// it still has to read, a bounded one).
    static func aheadBudget(throughput: Double) -> Int64 {
        max(256 << 20, Int64(min(throughput * 2, Double(Int64.max / 4))))
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
    /// The pieces and who owns which.
    var map: PieceMap
    /// The connections' speeds.
    var speeds = ConnectionSpeeds()
    /// What size of window each source serves at full speed, by ``sourceKey(of:)``.
    var windowSizes: [Int: WindowSizes] = [:]
    /// When ``stalledConnections(now:)`` last looked, and since when it has looked without a gap of
    /// more than ``awakeGap``: a process that was not scheduled (a loaded machine) read nothing
    /// meanwhile, and what its connections did not read then is no silence of the server's.
    var lastLook: ContinuousClock.Instant?
    var awakeSince: ContinuousClock.Instant?
    static let awakeGap: Duration = .milliseconds(100)

    init(segments: [Segment], settings: Settings = Settings()) {
        self.settings = settings
        map = PieceMap(segments: segments)
    }

    typealias Piece = PieceMap.Piece
    typealias Connection = ConnectionSpeeds.Connection
    typealias SourceBytes = ConnectionSpeeds.SourceBytes

    // The map's and the speeds' state, read and changed in place.
    var pieces: [Piece] {
        get { map.pieces }
        _modify { yield &map.pieces }
    }
    var connections: [Worker: Connection] {
        get { speeds.connections }
        _modify { yield &speeds.connections }
    }
    var firstIncomplete: Int { map.firstIncomplete }
    var writtenBytes: Int64 { map.writtenBytes }
    var departedRates: [Double] { speeds.departedRates }
    var bytesBySource: [Int: SourceBytes] { speeds.bytesBySource }

    // MARK: Reading

    var segments: [Segment] { map.segments }
    var isComplete: Bool { map.isComplete }
    /// The end of the contiguous complete prefix.
    var frontier: Int64 { map.frontier }
    /// Whether some piece is incomplete and has no owner.
    var hasWaitingWork: Bool { map.hasWaitingWork }

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
        let typical = speeds.typicalRate()
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
    func withinHorizon(_ offset: Int64) -> Bool { horizon.map { offset < $0 } ?? true }

    /// The first piece nobody owns with bytes to fetch inside the horizon.
    func waitingIndex() -> Int? {
        pieces.firstIndex { $0.owner == nil && $0.unclaimed > 0 && withinHorizon($0.claimed) }
    }

    /// Connections that received bytes within the last two seconds, other than `worker`.
    func workingConnections(besides worker: Worker, now: ContinuousClock.Instant) -> Int {
        connections.filter {
            $0.key != worker && $0.value.bytes > 0 && now - $0.value.lastProgress < .seconds(2)
        }.count
    }

    func piece(of worker: Worker) -> Piece? {
        map.ownedIndex(worker).map { pieces[$0] }
    }
}
