/// What the table decides from its connections' rates: steals, hedges, take-overs of overdue
/// windows, and which connections are far slower than their peers.
extension SegmentTable {
    /// The in-flight or waiting range with the most unclaimed bytes, split at its midpoint, when the
    /// upper half is at least the minimum split. The split stays past its owner's current window
    /// unless the owner would need more than ``Settings/stealCutSeconds`` for the rest of that window
    /// and is far slower than its peers (or would need five times that): then the window itself is
    /// cut, and the owner stops at the cut (a slow connection holding a large window is the tail
    /// everyone else would wait for). A cut closes the owner's connection, and the bytes the server
    /// had queued for it are lost: between connections of about one speed it only costs.
    func stealCandidate() -> (index: Int, victim: Worker, at: Int64)? {
        var best: (index: Int, victim: Worker, at: Int64, upper: Int64)?
        let cutAfter = cutWorthSeconds
        let typical = speeds.typicalRate()
        for index in pieces.indices {
            guard let (victim, at) = stealPoint(index, cutAfter: cutAfter, typical: typical) else { continue }
            let upper = pieces[index].end - at
            if best == nil || upper > best!.upper { best = (index, victim, at, upper) }
        }
        return best.map { ($0.index, $0.victim, $0.at) }
    }

    /// Where piece `index` would be split by a steal (see ``stealCandidate()``), if it is worth one.
    /// `cutAfter` is ``cutWorthSeconds`` and `typical` ``speeds.typicalRate()``, worked out once by the caller.
    func stealPoint(_ index: Int, cutAfter: Double, typical: Double) -> (victim: Worker, at: Int64)? {
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
    func frontierSplit(for worker: Worker) -> (index: Int, victim: Worker, at: Int64)? {
        guard firstIncomplete < pieces.count else { return nil }
        let piece = pieces[firstIncomplete]
        // Only a connection of known speed, at least the owner's, takes half of what the hash waits for.
        guard let owner = piece.owner, owner != worker, piece.unclaimed >= 2 * settings.minimumHedge,
            let mine = connections[worker]?.steadyRate, mine > 0
        else { return nil }
        // An owner not measured yet (it just reconnected) is taken to be typical.
        let measured = connections[owner]?.steadyRate ?? 0
        let rate = measured > 0 ? measured : speeds.typicalRate()
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
    func hedgeCandidate(
        for worker: Worker, now: ContinuousClock.Instant, frontierOnly: Bool = false, endgame: Bool = false
    ) -> (index: Int, victim: Worker, at: Int64)? {
        let myRate = speeds.expectedRate(of: worker)
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
                && (measured == 0 || isFarSlower(owner, typical: speeds.newcomerRate()))
            if whole { at = piece.claimed }
            let tail = piece.end - at
            guard tail >= (whole ? 1 : settings.minimumHedge), withinHorizon(at) else { continue }
            let victimSeconds = Double(piece.unclaimed) / victimRate
            // Taken whole, the owner keeps nothing to fetch meanwhile: this connection's wait is its
            // request's cost alone (a round trip or two for a new one), not the owner's grace. With
            // the grace, a shaped straggler's last 63 kB (63 ms at 1 MB/s) were left to it while
            // every other connection had finished, and a stall there (a retransmission's timeout)
            // held the download's end for 160 ms.
            let cost = myCost > 0 ? myCost : speeds.typicalRequestCost
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
    func provisionalRate(of worker: Worker, now: ContinuousClock.Instant) -> Double {
        guard let connection = connections[worker], connection.rate == 0, !connection.awaitingAnswer,
            let since = connection.windowSince
        else { return 0 }
        let elapsed = (now - since).seconds
        guard elapsed >= settleSeconds(requestCost: speeds.typicalRequestCost) else { return 0 }
        let rate = max(Double(connection.bytes - connection.windowBytes) / elapsed, 1)
        return rate * settings.slowFactor <= speeds.newcomerRate() ? rate : 0
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
    func overdueCandidate(
        for worker: Worker, now: ContinuousClock.Instant
    ) -> (index: Int, victim: Worker, at: Int64)? {
        let myRate = speeds.expectedRate(of: worker)
        guard myRate > 0 else { return nil }
        let typicalCost = speeds.typicalRequestCost
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
            let ownerRate = speeds.expectedRate(of: owner)
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
    func endgameSplit(
        for worker: Worker, now: ContinuousClock.Instant
    ) -> (index: Int, victim: Worker, at: Int64)? {
        let myRate = speeds.expectedRate(of: worker)
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
        let myCost = requestCost(of: worker)
        let ownerSeconds = Double(at - piece.claimed) / longest.rate
        let mySeconds = Double(piece.end - at) / myRate + myCost
        let gain = longest.seconds - max(ownerSeconds, mySeconds)
        let minimumGain = shared ? 2 * settings.endgameMinimumGain : settings.endgameMinimumGain
        guard gain >= max(minimumGain, 2 * myCost) else { return nil }
        return (longest.index, longest.owner, at)
    }

    /// What a request of `worker` costs: its measured cost, else its peers' typical one (0 for a
    /// connection the table does not know).
    func requestCost(of worker: Worker) -> Double {
        connections[worker].map { $0.requestCost > 0 ? $0.requestCost : speeds.typicalRequestCost } ?? 0
    }

    /// How long an owner must still need for the rest of its window before cutting it pays: the cut
    /// costs it its connection (a new one has to open and leave TCP's slow start) and the thief a
    /// request. At least ``Settings/stealCutSeconds``, four request costs, and ten round trips.
    var cutWorthSeconds: Double {
        max(settings.stealCutSeconds, 4 * speeds.typicalRequestCost, 10 * settings.roundTrip.seconds)
    }

    /// The connection's speed at `now` (``Connection/currentRate(now:settle:)``) while its window
    /// still has bytes to come; its measured speed between windows. 0 if unmeasured.
    func currentRate(of worker: Worker, now: ContinuousClock.Instant) -> Double {
        guard let connection = connections[worker] else { return 0 }
        guard let piece = piece(of: worker), piece.owner == worker, piece.claimed < piece.windowEnd else {
            return connection.rate
        }
        return connection.currentRate(now: now, settle: settleSeconds(requestCost: connection.requestCost))
    }

    /// How long a window must run to show a connection's speed: long enough to be more than the noise
    /// of a request's start (its cost, TCP's round trips).
    func settleSeconds(requestCost: Double) -> Double {
        max(settings.windowSettle.seconds, 2 * requestCost, 4 * settings.roundTrip.seconds)
    }

    /// The bytes the other connections write while `owner` fetches the rest of piece `index` at its
    /// measured speed: bytes the hash can read only once that piece is done.
    func backlog(whileWaitingFor index: Int, heldBy owner: Worker) -> Double {
        guard let rate = connections[owner]?.steadyRate, rate > 0 else { return 0 }
        return backlog(unclaimed: pieces[index].unclaimed, ownerRate: rate)
    }

    /// The bytes the other connections write while an owner at `ownerRate` fetches `unclaimed` bytes.
    func backlog(unclaimed: Int64, ownerRate: Double) -> Double {
        let aggregate = connections.values.reduce(0) { $0 + $1.rate }
        return Double(unclaimed) / ownerRate * max(aggregate - ownerRate, 0)
    }

    /// Whether the connection went silent in the middle of an answer: nothing came for
    /// ``Settings/silentGaps`` times the gap its reads have at its pace (its speed or its peers',
    /// the lower; a newcomer's when neither is measured), and for at least a window's settling time,
    /// (counted while this process ran on time: a loaded machine that did not schedule it for a while
    /// left bytes unread, and eviction threw away what was on its way: 27 kB over a test's bound),
    /// while the server shows it delivers: another connection brought bytes within that time, or no
    /// other has anything left to bring (the end of a download that had peers). On a shared limit the
    /// first does not count: the limit serves some connections while others wait their turn, and
    /// closing those wastes what is on its way (one rule without that exception sent 21 MB for a 13
    /// MiB file from a server capping its total). Without this, a stalled answer held its range for
    /// the whole stall timeout: 10 s for a 64 MiB file the others had fetched in 35 ms.
    func isSilent(
        _ worker: Worker, _ connection: Connection, peersRate: Double, now: ContinuousClock.Instant
    ) -> Bool {
        guard !connection.awaitingAnswer, connection.windowSince != nil else { return false }
        let own = connection.steadyRate
        let others = peersRate > 0 ? peersRate : speeds.newcomerRate()
        let pace = own > 0 && others > 0 ? min(own, others) : max(own, others)
        guard pace > 0 else { return false }
        let cost = connection.requestCost > 0 ? connection.requestCost : speeds.typicalRequestCost
        let limit = max(
            settleSeconds(requestCost: cost),
            settings.silentGaps * Double(max(connection.largestCommit, 64 << 10)) / pace)
        // Silence counts from when the process was last seen running on time (``awakeSince``).
        let since = max(connection.lastProgress, awakeSince ?? connection.lastProgress)
        guard (now - since).seconds >= limit else { return false }
        let othersDeliver = connections.contains {
            $0.key != worker && (now - $0.value.lastProgress).seconds < limit && $0.value.bytes > 0
        }
        if othersDeliver && !settings.sharedLimit { return true }
        let othersBusy = connections.contains { other in
            guard other.key != worker, let index = map.ownedIndex(other.key) else {
                return false
            }
            return pieces[index].owner == other.key && !pieces[index].segment.isComplete
        }
        return !othersBusy && (connections.count > 1 || !departedRates.isEmpty)
    }

    /// Whether `worker` runs ``Settings/slowFactor`` times slower than the typical connection.
    func isFarSlower(_ worker: Worker, typical: Double? = nil) -> Bool {
        guard let connection = connections[worker], !connection.awaitingAnswer else { return false }
        let rate = connection.steadyRate
        return rate > 0 && rate * settings.slowFactor <= (typical ?? speeds.typicalRate())
    }

}
