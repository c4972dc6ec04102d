/// What changes the table: connections joining and leaving, windows given and read, bytes claimed,
/// held, committed and given back.
extension SegmentTable {
    /// A connection starts (or restarts) taking part.
    mutating func join(_ worker: Worker, now: ContinuousClock.Instant) {
        if connections[worker] == nil {
            connections[worker] = Connection(sampleStart: now, lastProgress: now, joined: now)
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
        windowEnded(worker, now: now)
        if let index = map.ownedIndex(worker) {
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
            return takeSplit(index, at: at, from: victim, for: worker, now: now, hedged: true)
        }
        if let (index, victim, at) = frontierSplit(for: worker) {
            return takeSplit(index, at: at, from: victim, for: worker, now: now, hedged: false)
        }
        if let waiting = takeWaiting(for: worker, now: now) { return waiting }
        if let (index, victim, at) = lateProbeSplit(for: worker, now: now) {
            return takeSplit(index, at: at, from: victim, for: worker, now: now, hedged: false)
        }
        if let (index, victim, at) = stealCandidate() {
            return takeSplit(index, at: at, from: victim, for: worker, now: now, hedged: false)
        }
        if let (index, victim, at) = hedgeCandidate(for: worker, now: now) {
            return takeSplit(index, at: at, from: victim, for: worker, now: now, hedged: true)
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
            return takeSplit(index, at: at, from: victim, for: worker, now: now, hedged: true)
        }
        if let overdue = takeOverdue(for: worker, now: now) { return overdue }
        if let (index, victim, at) = endgameSplit(for: worker, now: now) {
            return takeSplit(index, at: at, from: victim, for: worker, now: now, hedged: false)
        }
        return nil
    }

    /// Splits piece `index` at `at` and gives the upper part to `worker`: a window taken over from
    /// `victim`, hedged or stolen.
    private mutating func takeSplit(
        _ index: Int, at: Int64, from victim: Worker, for worker: Worker, now: ContinuousClock.Instant,
        hedged: Bool
    ) -> (Window, Assignment) {
        let new = map.split(index, at: at)
        take(new, for: worker, now: now)
        return (
            openWindow(new, for: worker),
            hedged ? .hedged(from: victim, at: at) : .stolen(from: victim, at: at)
        )
    }

    /// The first waiting piece, for `worker` (with the untouched ones after it, up to its window).
    private mutating func takeWaiting(for worker: Worker, now: ContinuousClock.Instant) -> (
        Window, Assignment
    )? {
        guard var index = waitingIndex() else { return nil }
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

    /// The rest of a late probe's window (``WindowSizes/judgeLate(size:asked:now:connections:)``), for `worker`:
    /// the owner keeps what it brings while this connection's request goes out (four of its costs, at
    /// the owner's speed in the window so far), at least ``Settings/minimumHedge`` is taken, and the
    /// size is limited from now on.
    mutating func lateProbeSplit(for worker: Worker, now: ContinuousClock.Instant) -> (
        index: Int, victim: Worker, at: Int64
    )? {
        let count = connections.count
        for (key, sizes) in windowSizes {
            guard let owner = sizes.probe, owner != worker, sourceKey(of: worker) == key,
                let asked = connections[owner]?.windowAsked, let index = map.ownedIndex(owner),
                pieces[index].owner == owner
            else { continue }
            let piece = pieces[index]
            guard piece.windowEnd - piece.claimed >= 2 * settings.minimumHedge,
                windowSizes[key]?.judgeLate(size: sizes.probeSize, asked: asked, now: now, connections: count)
                    == true
            else { continue }
            windowSizes[key]?.probe = nil
            let cost = requestCost(of: worker)
            // The owner's speed in this window so far.
            let brought = (connections[owner]?.bytes ?? 0) - (connections[owner]?.bytesAtAsk ?? 0)
            let rate = Double(brought) / max((now - asked).seconds, 0.001)
            let keep = max(Int64(rate * 4 * cost), settings.minimumHedge)
            let at = min(piece.claimed + keep, piece.windowEnd - settings.minimumHedge)
            guard at > piece.claimed, withinHorizon(at) else { continue }
            return (index, owner, at)
        }
        return nil
    }

    /// How many of the next `count` bytes the connection may write; fewer when its end moved closer
    /// (a steal or hedge cut it). The claimed bytes must then be written and committed.
    mutating func claim(_ worker: Worker, count: Int64) -> Int64 {
        guard let index = map.ownedIndex(worker),
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
        guard count > 0, let index = map.ownedIndex(worker),
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
        // A lead taken before a server left a request ahead unanswered sends none after it.
        guard settings.requestsAhead, let index = map.ownedIndex(worker),
            pieces[index].owner == worker
        else { return nil }
        let from = pieces[index].windowEnd
        guard from >= pieces[index].claimed, from < pieces[index].end, withinHorizon(from) else { return nil }
        let to = min(pieces[index].end, from + windowSize(for: worker), horizon ?? Int64.max)
        pieces[index].windowEnd = to
        connections[worker]?.requestEnd = from
        windowSizes[sourceKey(of: worker)]?.asked(worker, size: to - from)
        return Window(piece: pieces[index].start, range: from..<to)
    }

    /// The connection's current answer ended, and the answer to the request it sent ahead for
    /// `window` comes next: true when that window is still its own (its piece, from its first byte not
    /// written), false when a steal or a cut took it meanwhile (that answer is then not its to write).
    mutating func takeAhead(_ worker: Worker, _ window: Window, now: ContinuousClock.Instant) -> Bool {
        guard map.owned[worker] == window.piece, let index = map.index(of: window.piece),
            pieces[index].owner == worker, pieces[index].claimed == window.range.lowerBound,
            pieces[index].segment.resumeOffset == window.range.lowerBound, pieces[index].unclaimed > 0
        else { return false }
        pieces[index].windowEnd = min(
            max(pieces[index].windowEnd, window.range.upperBound), pieces[index].end)
        // The window that ended was the probe unless the one whose answer comes now is.
        let nextIsProbe =
            windowSizes[sourceKey(of: worker)].map {
                $0.probe == worker && Int64(window.range.count) == $0.probeSize
            } ?? false
        windowEnded(worker, now: now, probeEnded: !nextIsProbe)
        connections[worker]?.awaitingAnswer = true
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
    mutating func continueInto(after index: Int, for worker: Worker) -> Bool {
        let piece = pieces[index]
        guard piece.windowEnd > piece.end, index + 1 < pieces.count else { return false }
        let next = pieces[index + 1]
        guard next.segment.written == 0, next.claimed == next.start, withinHorizon(next.start) else {
            return false
        }
        if let owner = next.owner {
            guard owner != worker, connections[owner]?.awaitingAnswer == true else { return false }
        }
        if next.end > piece.windowEnd { _ = map.split(index + 1, at: piece.windowEnd) }
        if let owner = pieces[index + 1].owner { map.owned[owner] = nil }
        pieces[index].segment.end = pieces[index + 1].end
        pieces.remove(at: index + 1)
        // A piece that was complete has bytes to come again: the prefix ends in it.
        map.firstIncomplete = min(firstIncomplete, index)
        return true
    }

    /// Records `count` claimed bytes as written. Returns true when the frontier moved.
    @discardableResult
    mutating func commit(_ worker: Worker, count: Int64, now: ContinuousClock.Instant) -> Bool {
        guard map.owned[worker] != nil else { return false }
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
        guard map.owned[worker] != nil else { return false }
        return written(worker, count: count)
    }

    /// `count` claimed bytes are in the file: the piece's written bytes grow.
    mutating func written(_ worker: Worker, count: Int64) -> Bool {
        guard let index = map.ownedIndex(worker) else { return false }
        precondition(pieces[index].segment.written + count <= pieces[index].claimed - pieces[index].start)
        pieces[index].segment.written += count
        map.writtenBytes += count
        guard index == firstIncomplete else { return false }
        map.advanceFrontier()
        return true
    }

    /// `count` bytes came on the connection now: its progress, and its speed.
    mutating func arrived(_ worker: Worker, count: Int64, now: ContinuousClock.Instant) {
        guard var connection = connections[worker] else { return }
        connection.bytes += count
        if let group = connection.group {
            speeds.bytesBySource[group, default: SourceBytes()].total += count
            speeds.bytesBySource[group]?.perConnection[worker, default: 0] += count
        }
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
        if let before = connections[worker]?.group, before != group {
            speeds.bytesBySource[before]?.perConnection[worker] = nil
        }
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
    mutating func takeOverdue(
        for worker: Worker, now: ContinuousClock.Instant
    ) -> (Window, Assignment)? {
        guard let (index, victim, at) = overdueCandidate(for: worker, now: now) else { return nil }
        let new = at > pieces[index].start ? map.split(index, at: at) : takeOver(index)
        take(new, for: worker, now: now)
        return (openWindow(new, for: worker), .hedged(from: victim, at: at))
    }

    /// The connection stops taking part (it failed, gave up or was dropped): its unfinished range
    /// waits for another connection, from its first unwritten byte.
    mutating func leave(_ worker: Worker) {
        endProbe(of: worker)
        drop(worker)
        if let connection = connections[worker] {
            // Unmeasured (it ended before its first sample), its bytes over its lifetime say how
            // fast it went, once they are more than a request's start.
            let lifetime = (connection.lastProgress - connection.joined).seconds
            let rate =
                connection.rate > 0
                ? connection.rate
                : connection.bytes >= 1 << 20 && lifetime > 0 ? Double(connection.bytes) / lifetime : 0
            if rate > 0 {
                speeds.departed(at: rate)
            }
            if let group = connection.group { speeds.bytesBySource[group]?.perConnection[worker] = nil }
        }
        connections[worker] = nil
        map.owned[worker] = nil
    }

    /// Connections that received nothing for the stall timeout while owning a range, or for longer
    /// than their pace explains while the server shows it delivers (``isSilent(_:_:peersRate:now:)``),
    /// or that have been far slower than their peers for the slow grace. Their ranges are cut at what they claimed
    /// and wait for others; the caller closes their sockets, and they start over on new ones.
    mutating func stalledConnections(now: ContinuousClock.Instant) -> [Worker] {
        if let lastLook, now - lastLook <= Self.awakeGap {
            awakeSince = awakeSince ?? lastLook
        } else {
            awakeSince = now
        }
        lastLook = now
        var stalled: [Worker] = []
        let overall = speeds.typicalRate()
        let measuredOverall = connections.values.count { $0.rate > 0 }
        for (worker, connection) in connections.sorted(by: { $0.key < $1.key }) {
            // Peers are the connections of the same source, when there are several.
            var typical = overall
            var measured = measuredOverall
            if let group = connection.group {
                let rates = connections.values.filter { $0.group == group && $0.rate > 0 }.map(\.rate)
                typical = ConnectionSpeeds.median(rates)
                measured = rates.count
            }
            guard map.owned[worker] != nil else {
                connections[worker]?.slowSince = nil
                continue
            }
            let silent =
                now - connection.lastProgress >= settings.stallTimeout
                || isSilent(worker, connection, peersRate: typical, now: now)
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
        guard let index = map.ownedIndex(worker),
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
        // Where the limit is shared, a leaving connection finishes what it asked for, up to a first
        // window (those opened before the limit was known): fewer carry the same total, so its window
        // costs no time, and a cut throws away what the server has sent ahead into the buffers (on
        // `--limit-rate`, 6 MiB more sent than the 64 MiB file). The opening answer, the whole file,
        // is not kept to its end.
        let soon = max(
            SegmentFetcher.drainLimit, Int64(rate * 0.5), settings.sharedLimit ? settings.initialWindow : 0)
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
            _ = map.split(index, at: keep)
        } else {
            // A leaving connection goes on into no other piece.
            pieces[index].windowEnd = min(pieces[index].windowEnd, pieces[index].end)
        }
    }

    /// Whether the worker owns a piece it has claimed to the end and not written to the end.
    func holdsClaimedUnwrittenTail(_ worker: Worker) -> Bool {
        guard let index = map.ownedIndex(worker),
            pieces[index].owner == worker
        else { return false }
        return pieces[index].unclaimed == 0 && !pieces[index].segment.isComplete
    }

    /// Cuts the worker's piece at what it has claimed; returns false if it had nothing unclaimed.
    @discardableResult
    mutating func giveBackUnclaimed(of worker: Worker) -> Bool {
        guard let index = map.ownedIndex(worker),
            pieces[index].owner == worker,
            pieces[index].unclaimed > 0
        else { return false }
        if pieces[index].claimed == pieces[index].segment.resumeOffset {
            // Nothing is being written: the whole rest goes back.
            pieces[index].owner = nil
            pieces[index].opening = false
            pieces[index].windowEnd = pieces[index].claimed
            map.owned[worker] = nil
        } else {
            // Bytes may still be on their way to the file: the owner keeps exactly those.
            _ = map.split(index, at: pieces[index].claimed)
        }
        return true
    }
}
