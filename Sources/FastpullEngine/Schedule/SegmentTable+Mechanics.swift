/// The table's arithmetic: sizing windows, and taking and giving back pieces.
extension SegmentTable {
    /// About `windowSeconds` of the connection's measured speed (its peers' typical speed while it
    /// has none), or more when its requests cost more than ``Settings/requestCostShare`` of that
    /// (the cost is then that share of a request), within the initial and maximum window; and no
    /// larger than its source serves at full speed (``WindowSizes``): growing, by a probe of
    /// ``WindowSizes/growth`` times the proven size, or at once to what the request's cost asks for when a request costs more than a
    /// window takes to judge (``WindowSizes/judgedSeconds``: an object store, a long round trip,
    /// where doubling would pay that cost many times); limited, the proven size (measured, that
    /// trumps the cost).
    func windowSize(for worker: Worker) -> Int64 {
        let size = unlimitedWindowSize(for: worker)
        guard let sizes = windowSizes[sourceKey(of: worker)], let allowed = sizes.allowed(for: worker) else {
            return size
        }
        if sizes.limited { return min(size, max(allowed, settings.minimumHedge)) }
        let cost = connections[worker]?.requestCost ?? 0
        return min(size, max(allowed, cost > WindowSizes.judgedSeconds ? costWindow(for: worker) : 0))
    }

    /// The window whose fixed cost is ``Settings/requestCostShare`` of its time, at the connection's
    /// speed.
    func costWindow(for worker: Worker) -> Int64 {
        let own = connections[worker]?.steadyRate ?? 0
        let cost = connections[worker].map(\.requestCost) ?? 0
        let share = min(max(settings.requestCostShare, 0.001), 1)
        return Int64(own * cost * (1 - share) / share)
    }

    /// The key of `worker`'s source in ``windowSizes``.
    func sourceKey(of worker: Worker) -> Int { connections[worker]?.group ?? -1 }

    /// A connection's window ended (it asks for the next, or the next's answer comes): its speed,
    /// from when it was asked for to its last byte (a burst's bytes come in one read), tells its
    /// source's ``WindowSizes``. The next window is asked for `now`.
    ///
    /// The probe ends with the window that was the probe (`probeEnded`): a window asked ahead
    /// meanwhile ends the one before it, not the probe.
    mutating func windowEnded(_ worker: Worker, now: ContinuousClock.Instant, probeEnded: Bool = true) {
        if probeEnded { endProbe(of: worker) }
        guard let connection = connections[worker] else { return }
        connections[worker]?.windowAsked = now
        connections[worker]?.bytesAtAsk = connection.bytes
        guard let asked = connection.windowAsked, connection.windowSince != nil else { return }
        connections[worker]?.windowSince = nil
        windowSizes[sourceKey(of: worker), default: WindowSizes()].finished(
            bytes: connection.bytes - connection.bytesAtAsk, asked: asked, end: connection.lastProgress,
            connections: connections.count)
    }

    /// `worker` probes no source's window size any more (its window ended, or it left; a connection
    /// that moved to another source may have probed the one before).
    mutating func endProbe(of worker: Worker) {
        for (key, sizes) in windowSizes where sizes.probe == worker { windowSizes[key]?.probe = nil }
    }

    private func unlimitedWindowSize(for worker: Worker) -> Int64 {
        let own = connections[worker]?.steadyRate ?? 0
        let typical = own > 0 ? own : speeds.typicalRate()
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
    func horizonShare(for worker: Worker) -> Int64 {
        guard let horizon else { return Int64.max }
        let within = pieces.reduce(Int64(0)) { $0 + max(0, min($1.end, horizon) - $1.claimed) }
        let working = connections.count { $0.key != worker && map.owned[$0.key] != nil } + 1
        return max(within / Int64(working), settings.minimumSplit)
    }

    /// Joins the untouched, unowned pieces right after `index` into it while its unclaimed part stays
    /// within `limit` and ``Settings/maximumMergedPiece``.
    mutating func mergeFollowing(_ index: Int, upTo limit: Int64) {
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
    mutating func openWindow(_ index: Int, for worker: Worker) -> Window {
        let size = min(windowSize(for: worker), horizonShare(for: worker))
        connections[worker]?.awaitingAnswer = true
        connections[worker]?.windowSince = nil
        connections[worker]?.requestEnd = nil
        let from = pieces[index].claimed
        let to = min(pieces[index].end, from + size, horizon ?? Int64.max)
        pieces[index].windowEnd = to
        windowSizes[sourceKey(of: worker)]?.asked(worker, size: to - from)
        return Window(piece: pieces[index].start, range: from..<to)
    }

    mutating func take(_ index: Int, for worker: Worker, now: ContinuousClock.Instant) {
        pieces[index].owner = worker
        pieces[index].opening = false
        if connections[worker] != nil { map.owned[worker] = pieces[index].start }
        connections[worker]?.lastProgress = now
    }

    /// Ends a connection's ownership: unclaimed-but-unwritten bytes return to the piece.
    mutating func drop(_ worker: Worker) {
        guard let index = map.ownedIndex(worker) else { return }
        map.owned[worker] = nil
        guard pieces[index].owner == worker else { return }
        pieces[index].owner = nil
        pieces[index].opening = false
        pieces[index].claimed = pieces[index].segment.resumeOffset
        pieces[index].windowEnd = pieces[index].claimed
    }

    /// Piece `index`, none of whose bytes are written or claimed, leaves its owner (which stops: it
    /// may claim nothing more) and waits for another. Returns `index`.
    mutating func takeOver(_ index: Int) -> Int {
        precondition(pieces[index].claimed == pieces[index].start)
        if let owner = pieces[index].owner { giveBackUnclaimed(of: owner) }
        return index
    }

}

extension SegmentTable {
    /// Bytes `range`, every one of them written, are to be fetched again (``PieceMap/reopen(_:)``).
    mutating func reopen(_ range: Range<Int64>) {
        map.reopen(range)
    }
}
