#if canImport(Glibc)
    import Glibc
#endif

/// How many connections a download keeps, decided from the ``LinkVerdict`` its steps give.
///
/// **The model.** Each step measures the total rate and the rate of the connections that ran before the
/// last change (the incumbents). A step up after which the incumbents kept their rate while the total
/// grew says *each connection has its own limit*; one after which the total did not grow by
/// ``gain`` says *a shared limit* of about the best total of the last steps; one in which the process
/// used most of the cores and whose newcomers took from the others says *the CPU is the limit*; a
/// machine busy with other work (a local server) leaves the total to decide.
///
/// **The policy.** It starts with a few connections (more on long round trips) and tries half again as
/// many. While each connection has its own limit it multiplies the count, by ``freeMultiplier`` when
/// the newcomers cost the incumbents nothing, else by two. At a shared limit or the CPU it halves the
/// count it had while the total holds within ``tolerance`` of the limit — it keeps the fewest that
/// reach it — and goes back to the last count that held when fewer lose. Held there, every
/// ``probeInterval`` steps it tries half again as many, kept only when they pay twice in a row (more
/// that do not pay say the limit is shared, as on the rise), and every other probe tries a third
/// fewer where the limit is shared or the count is at the ceiling (more cannot be tried there),
/// kept when the total holds twice; a total that falls under ``decline`` of the held level probes at
/// once. A server refusing connections holds the
/// count at those that work. A step that cannot be judged — its newcomers had not started, connections
/// leaving still took their share — is measured again; in the last second's worth of bytes the count
/// only holds.
package struct ConnectionPolicy: Sendable, Equatable {
    /// The gain a step up must show, twice for a probe.
    static let gain = 0.15
    /// The loss a count of fewer connections may show and still hold the total.
    static let tolerance = 0.05
    /// The share of their rate the incumbents keep when the newcomers cost them nothing (a busy
    /// machine and the server's scheduling take 10–25 % from them on a limit of each one's own).
    static let freeShare = 0.8
    /// A total that grew by this share of the count's growth says the newcomers cost nothing too.
    static let proportionalGrowth = 0.6
    /// The share of an incumbent's rate each newcomer must bring for a step whose incumbents kept
    /// theirs to be judged at once.
    static let startedShare = 0.5
    /// The count's factor after a step that cost the incumbents nothing.
    static let freeMultiplier = 8
    /// The first step's factor: a doubling, whose signal (the total doubles, or the incumbents lose
    /// half) stands out of a link's noise, and a server at its cap sees twice the start at most.
    static let firstFactor = 2.0
    /// A probe's factor from a held count.
    static let probeFactor = 1.5
    /// The factor of a probe for fewer on a shared limit.
    static let fewerFactor = 2.0 / 3
    /// Held steps between probes.
    static let probeInterval = 8
    /// A held total falling below this share of its level probes at once.
    static let decline = 0.6
    /// Steps without probes after a server refused connections.
    static let refusedQuiet = 32
    /// A loss beyond the cut by more than this share of it says the level fewer were held to was a
    /// moment, not the link.
    static let proportionalLoss = 0.15

    enum State: Sendable, Equatable {
        /// Measuring the first count.
        case starting
        /// Stepping the count up while it pays.
        case rising
        /// Halving from the count that held while fewer hold the total.
        case descending
        /// At a count that works.
        case steady
        /// Trying more than the held count.
        case probingUp
        /// Trying fewer than the held count.
        case probingDown
    }

    /// `FASTPULL_CONNECTION_POLICY=rules` runs the measured rules this model replaces, for the
    /// benchmark harness's side-by-side runs until they are gone.
    static var rulesByEnvironment: Bool {
        getenv("FASTPULL_CONNECTION_POLICY").map { String(cString: $0) == "rules" } ?? false
    }
    let maximum: Int
    private(set) var target: Int
    private(set) var state: State = .starting
    private(set) var verdict: LinkVerdict = .unknown
    private(set) var decision: PolicyDecision
    /// The total to beat (rising, probing up) or to hold (descending, steady, probing down).
    private(set) var reference: Double?
    /// The count `reference` was measured at.
    private(set) var referenceCount: Int
    /// The connections `reference` was measured with.
    private(set) var incumbents: Set<Int> = []
    /// The best totals of the last steps, newest last.
    private var totals: [Double] = []
    private var heldSteps = 0
    private var quietSteps = 0
    private var paidSteps = 0
    private var probesUp = 0
    private var remeasured = false
    private var lookedAgain = false
    /// The count at which the limit was found shared: more than that are never probed for while it
    /// is (more cannot raise a shared total; a probe is for a count judged too few).
    private var sharedAt: Int?
    /// Whether fewer losing their share already started the rise over (once per download).
    private var roseAgain = false
    /// Looks at a step whose incumbents were still climbing.
    private var climbLooks = 0
    /// The numbers of the step being judged.
    private var evidence: PolicyEvidence?

    /// Starts at `initial` connections, at most `maximum`.
    init(initial: Int, maximum: Int) {
        self.maximum = max(1, maximum)
        target = min(max(initial, 1), self.maximum)
        referenceCount = target
        decision = PolicyDecision(count: target, reason: .start, verdict: .unknown)
        if target >= self.maximum { state = .steady }
    }

    /// Starts at the count an earlier run of the same download held, with its verdict; its first probe
    /// comes two steps in.
    init(maximum: Int, remembering memory: LinkMemory) {
        self.init(initial: memory.connections, maximum: maximum)
        state = .steady
        let rate = Double(memory.bytesPerSecond)
        verdict = memory.shared ? .shared(capacity: rate) : .ownLimit(bytesPerSecond: rate / Double(target))
        if memory.shared { sharedAt = target }
        heldSteps = Self.probeInterval - 2
        // What was remembered is checked at the first probe: fewer on a shared limit, and fewer at
        // the ceiling, where more cannot be tried (a misjudged run must not hand its count on).
        probesUp = memory.shared || target >= self.maximum ? 1 : 0
        decision = PolicyDecision(count: target, reason: .remembered, verdict: verdict)
    }

    /// The best total of the last ten steps.
    var capacity: Double { totals.max() ?? 0 }

    /// What this download has learned of its link once it holds a count it measured: that count, the
    /// total it held, and whether the limit is shared. Nil while the count still moves.
    var learned: (connections: Int, bytesPerSecond: Double, shared: Bool)? {
        guard let reference, reference > 0 else { return nil }
        switch state {
        case .steady, .probingDown: return (target, reference, verdict.isShared)
        case .probingUp: return (referenceCount, reference, verdict.isShared)
        case .starting, .rising, .descending: return nil
        }
    }

    /// Whether the count is still being stepped up (the table shares work for the counts to come).
    var isRising: Bool { state == .starting || state == .rising }

    /// The share of a full step the next measurement needs: the first count is a reference only, and
    /// the first step up, a doubling, the largest relative change: a quarter each.
    var measurementShare: Double {
        reference == nil || state == .rising && probesUp == 0 && totals.count <= 1 ? 0.25 : 1
    }

    /// Whether fewer, tried against a shared limit, already lost more than the cut: the level they were
    /// held to was a moment (every request's first burst), not the link, so the verdict built on it is
    /// void. Judged early: every look at too few is time lost.
    func levelWasAMoment(_ step: ConnectionController.Step) -> Bool {
        // A look again after such a loss is a whole step: what the leaving connections were charged
        // for is waited out.
        guard state == .descending, !roseAgain, !lookedAgain, !step.retiring, let reference else {
            return false
        }
        let cut = 1 - Double(target) / Double(max(referenceCount, 1))
        return 1 - step.total / max(reference, 1) > (1 + Self.proportionalLoss) * cut
    }

    /// Judges one measured step; returns the decision when the count or the verdict changed.
    mutating func judge(_ step: ConnectionController.Step, remaining: Int64) -> PolicyDecision? {
        // A step in which nothing came tells nothing of a limit (connections still opening, a
        // server's bucket refilling): it is measured again.
        guard step.total > 0 else { return nil }
        totals.append(step.total)
        if totals.count > 10 { totals.removeFirst() }
        let before = reference ?? step.total
        evidence = PolicyEvidence(
            countBefore: referenceCount, totalBefore: before, count: target, total: step.total,
            incumbentsKept: step.incumbents / max(before, 1), capacity: capacity, cpuShare: step.cpuShare)
        switch state {
        case .starting: return start(step)
        case .rising: return rise(step, remaining: remaining)
        case .descending: return descend(step)
        case .steady: return hold(step, remaining: remaining)
        case .probingUp: return probeUp(step)
        case .probingDown: return probeDown(step)
        }
    }

    /// A server refused a connection while `working` others transfer: hold at those, without probes
    /// for a while.
    mutating func refused(working: Int) {
        guard working > 0 else { return }
        target = max(1, min(target, working))
        referenceCount = target
        state = .steady
        heldSteps = 0
        quietSteps = Self.refusedQuiet
        decision = PolicyDecision(count: target, reason: .refused, verdict: verdict)
    }

    // MARK: - States

    private mutating func start(_ step: ConnectionController.Step) -> PolicyDecision? {
        adopt(step)
        if step.busy {
            verdict = .cpu(share: step.cpuShare)
            state = .steady
            return decide(target, .cpuLimit)
        }
        state = .rising
        return decide(stepped(target, by: Self.firstFactor), .start)
    }

    private mutating func rise(_ step: ConnectionController.Step, remaining: Int64) -> PolicyDecision? {
        guard let reference, reference > 0 else { return start(step) }
        let (kept, free, paid) = raised(step, against: reference)
        // The incumbents grew beyond the gain themselves: they were still climbing (TCP's slow start),
        // and the step cannot tell the newcomers' share from theirs. That rate is then the one to
        // compare with, and the step is measured again (a few times at most: a link whose rate keeps
        // rising is judged as it is).
        if kept > 1 + Self.gain, climbLooks < 4 {
            climbLooks += 1
            self.reference = step.incumbents
            return nil
        }
        // A step that did not pay is measured twice before the limit is called shared: newcomers not
        // started yet (a first window on its way), or a reference that was a moment (a server's burst
        // at the start of every request) read once as a shared limit.
        if !paid, !step.busy, !remeasured {
            remeasured = true
            return nil
        }
        // The incumbents kept their rate but the newcomers brought less than ``startedShare`` of an
        // incumbent's each: they are still starting, or the link is shared and the incumbents have not
        // yielded yet; the step cannot tell, and is measured again. (A shared 50 MB/s link: 4 → 8
        // connections, 43 → 49 MiB/s, the incumbents keeping 103 %, was judged *each connection has
        // its own limit*, and the other source's connections were moved to it.)
        if paid, !remeasured, kept >= Self.freeShare, newcomersShare(step) < Self.startedShare {
            remeasured = true
            return nil
        }
        let ending = Double(remaining) < max(reference, step.total)
        if paid {
            let yieldedToNewcomers = !free && yielded(step, kept: kept, against: reference)
            adopt(step)
            // The total grew, but the incumbents lost most of what they had, or yielded to newcomers
            // that were not free as one limit shared by all divides it: a shared limit that
            // the count before did not fill (its measurement caught the limit's start), and the
            // fewest that reach it are looked for. (A server capping its total at 5 MB/s: 4 → 8
            // connections, 3.9 → 5.8 MiB/s, the incumbents keeping 50 %, was judged *each connection
            // has its own limit* and doubled to 16.)
            if kept < 0.5 || yieldedToNewcomers {
                foundShared(at: target)
                if ending { return settle(.ending) }
                state = .descending
                return decide(max(1, target / 2), .sharedLimit)
            }
            verdict = .ownLimit(bytesPerSecond: step.total / Double(max(target, 1)))
            // More pay even near the end: the newcomers take work from the tail's owners.
            if target >= maximum { return settle(.ownLimit) }
            return decide(min(target * (free ? Self.freeMultiplier : 2), maximum), .ownLimit)
        }
        // Near the end a step that did not pay proves nothing (the work runs out), unless the CPU was
        // busy: then the count before is the known better one.
        if ending {
            guard step.busy else { return settle(.ending) }
            verdict = .cpu(share: step.cpuShare)
            return settle(.cpuLimit, at: referenceCount)
        }
        // Not paid: the limit is shared (or the CPU's). Half the count before is tried against it.
        verdict = step.busy ? .cpu(share: step.cpuShare) : .shared(capacity: capacity)
        if !step.busy { sharedAt = target }
        self.reference = max(reference, step.total)
        state = .descending
        let fewer = step.busy ? referenceCount * 3 / 4 : referenceCount / 2
        guard fewer >= 1, fewer < referenceCount else {
            return settle(step.busy ? .cpuLimit : .sharedLimit, at: referenceCount)
        }
        return decide(fewer, step.busy ? .cpuLimit : .sharedLimit)
    }

    private mutating func descend(_ step: ConnectionController.Step) -> PolicyDecision? {
        let level = reference ?? step.total
        if step.total >= level * (1 - Self.tolerance) {
            lookedAgain = false
            // Fewer that did better set the level the next fewer must hold (on a busy CPU every
            // connection costs, so fewer can do better).
            reference = max(level, step.total)
            referenceCount = target
            incumbents = step.workers
            let fewer = verdict.isCPU ? target * 3 / 4 : target / 2
            guard fewer >= 1, fewer < target else { return settle(.fewerHold) }
            return decide(fewer, .fewerHold)
        }
        return fewerLost(step, level: level)
    }

    private mutating func hold(_ step: ConnectionController.Step, remaining: Int64) -> PolicyDecision? {
        guard let level = reference else {
            adopt(step)
            return nil
        }
        heldSteps += 1
        if quietSteps > 0 { quietSteps -= 1 }
        let ending = Double(remaining) < level * 2
        if step.busy, target > 1, !ending, !step.retiring {
            verdict = .cpu(share: step.cpuShare)
            adopt(step)
            state = .descending
            return decide(max(1, target * 3 / 4), .cpuLimit)
        }
        if step.retiring { return nil }
        let falling = step.total < level * Self.decline && !ending
        reference = falling ? level : 0.75 * level + 0.25 * step.total
        guard quietSteps == 0, !ending, falling || heldSteps >= Self.probeInterval else { return nil }
        referenceCount = target
        incumbents = step.workers
        paidSteps = 0
        heldSteps = 0
        // Every other probe tries fewer on a shared limit, and at the ceiling, where more cannot be
        // tried, on any: a verdict of each connection's own limit is checked there too. On a shared
        // limit the ceiling is the count that found it.
        let ceiling = verdict.isShared ? min(maximum, sharedAt ?? maximum) : maximum
        let atCeiling = target >= ceiling
        if !falling, target > 1,
            probesUp >= 1 && (verdict.isShared || atCeiling) || verdict.isShared && atCeiling
        {
            probesUp = 0
            state = .probingDown
            return decide(max(1, Int((Double(target) * Self.fewerFactor).rounded(.down))), .probeDown)
        }
        probesUp += 1
        guard !atCeiling else { return nil }
        // More must beat what the count does now: the held level, or the latest step if that was
        // better; after a fall, the latest step (the level is gone).
        reference = falling ? step.total : max(reference ?? 0, step.total)
        state = .probingUp
        return decide(min(stepped(target, by: Self.probeFactor), ceiling), falling ? .fell : .probeUp)
    }

    private mutating func probeUp(_ step: ConnectionController.Step) -> PolicyDecision? {
        let (_, free, paid) = raised(step, against: self.reference ?? step.total)
        guard paid else {
            // More did not pay: as on the rise, the limit is shared (unless the CPU was busy), and the
            // next probe tries fewer.
            if !step.busy, !verdict.isShared { foundShared(at: referenceCount) }
            return settle(.probeLost, at: referenceCount)
        }
        paidSteps += 1
        guard paidSteps >= 2 else { return nil }
        adopt(step)
        verdict = .ownLimit(bytesPerSecond: step.total / Double(max(target, 1)))
        guard target < maximum else { return settle(.ownLimit) }
        state = .rising
        return decide(min(target * (free ? 4 : 2), maximum), .ownLimit)
    }

    private mutating func probeDown(_ step: ConnectionController.Step) -> PolicyDecision? {
        let level = reference ?? step.total
        guard step.total >= level * (1 - Self.tolerance) else { return fewerLost(step, level: level) }
        lookedAgain = false
        paidSteps += 1
        guard paidSteps >= 2 else { return nil }
        referenceCount = target
        incumbents = step.workers
        state = .descending
        // Fewer carry the total: whatever was judged before, the limit is shared.
        if !verdict.isShared { foundShared(at: referenceCount) }
        return decide(target, .fewerHold)
    }

    /// Fewer than the count that held lost against its level.
    private mutating func fewerLost(_ step: ConnectionController.Step, level: Double) -> PolicyDecision? {
        // Connections just asked to leave still carry their last windows: nothing to judge yet.
        if step.retiring { return nil }
        let cut = 1 - Double(target) / Double(max(referenceCount, 1))
        let loss = 1 - step.total / max(level, 1)
        // A loss far smaller than the cut is looked at again: the bytes the leaving connections had in
        // flight (the server's buffers, a shaper's queue) still take the link for a step. So is one
        // beyond the cut, which no limit explains (fewer on one shared limit lose less than the cut,
        // fewer of their own limits lose the cut): the connections that just left were charged for
        // bytes nobody received (a server's rate limiter, a shaper's queue), and the ones that stay
        // wait that out. (A server capping its total at 5 MB/s: 8 → 4 connections carried 1.9 MiB/s
        // in the first look after the four left, and the count was sent back up to 16.)
        if !lookedAgain, loss < 0.75 * cut || loss > (1 + Self.proportionalLoss) * cut {
            lookedAgain = true
            return nil
        }
        lookedAgain = false
        // Fewer lost more than the cut: the level they were held to was a moment (every request's
        // first burst), not the link, and the verdict built on it is void: the rise starts over from
        // the count before, once. (A loss about the cut is the knee: the count that held is the
        // fewest that reach the limit, which both readings agree on.)
        if !roseAgain, !verdict.isCPU, loss > (1 + Self.proportionalLoss) * cut {
            roseAgain = true
            verdict = .ownLimit(bytesPerSecond: level / Double(max(referenceCount, 1)))
            state = .rising
            reference = nil
            incumbents = []
            totals.removeAll()
            return decide(referenceCount, .levelWasAMoment)
        }
        return settle(.fewerLost, at: referenceCount)
    }

    // MARK: - Helpers

    /// What a step up says against the `reference` total of the count before: the share of it the
    /// incumbents kept; whether the newcomers were free (the incumbents kept their rate and each
    /// newcomer brought at least ``startedShare`` of one's — newcomers that brought next to nothing
    /// into a link the incumbents did not fill are no sign of a limit of each one's own —, or the
    /// total grew nearly as the count did — by 60 % of it: each newcomer brought about what an incumbent
    /// had, and a busy machine takes a little from every connection, which a limit of each one's own
    /// would not); and whether the raise paid (the total grew by the gain, or by half of it when
    /// free). On a busy CPU it paid only when the newcomers were free (the CPU did not hold them
    /// back) or when the machine was busy with other work, not the download's: then the total tells
    /// whether more pay, as on an idle machine. (Before, a busy step never paid: a local server and
    /// the kernel's shaping kept a two-core machine busy, and 8 → 64 connections that took the total
    /// from 119 to 619 MiB/s, the download using half the cores, were judged *the CPU is the limit*
    /// and sent back to 8.)
    /// What each newcomer of a step up brought, as a share of what each incumbent did.
    private func newcomersShare(_ step: ConnectionController.Step) -> Double {
        let newcomers = target - referenceCount
        guard newcomers > 0, referenceCount > 0, step.incumbents > 0 else { return 1 }
        let each = max(step.total - step.incumbents, 0) / Double(newcomers)
        return each / (step.incumbents / Double(referenceCount))
    }

    /// Whether the incumbents of a step up kept less than a limit shared equally by every connection
    /// leaves them (the count before's share of the new total), by more than ``tolerance``: the
    /// newcomers took more each than an incumbent kept, as a limit shared by all hands a newcomer its
    /// share. (Newcomers still starting take less, and say nothing yet.)
    private func yielded(_ step: ConnectionController.Step, kept: Double, against reference: Double) -> Bool {
        let sharedKept = Double(referenceCount) / Double(max(target, 1)) * step.total / max(reference, 1)
        return kept < sharedKept * (1 - Self.tolerance)
    }

    private func raised(_ step: ConnectionController.Step, against reference: Double)
        -> (kept: Double, free: Bool, paid: Bool)
    {
        let kept = step.incumbents / max(reference, 1)
        let growth = Double(target) / Double(max(referenceCount, 1)) - 1
        let grown = growth > 0 ? (step.total / max(reference, 1) - 1) / growth : 0
        let free =
            kept >= Self.freeShare && newcomersShare(step) >= Self.startedShare
            || grown >= Self.proportionalGrowth
        let paid =
            (!step.busy || step.contended || free)
            && (step.total >= reference * (1 + Self.gain)
                || free && step.total >= reference * (1 + Self.gain / 2))
        return (kept, free, paid)
    }

    /// The limit is shared, found at `count`: the most connections probes ask for while it is.
    private mutating func foundShared(at count: Int) {
        verdict = .shared(capacity: capacity)
        sharedAt = count
    }

    private mutating func adopt(_ step: ConnectionController.Step) {
        reference = step.total
        referenceCount = target
        incumbents = step.workers
    }

    /// Holds at `count` (the count it has, unless said) for `reason`.
    private mutating func settle(_ reason: PolicyReason, at count: Int? = nil) -> PolicyDecision {
        state = .steady
        heldSteps = 0
        return decide(count ?? target, reason)
    }

    private func stepped(_ count: Int, by factor: Double) -> Int {
        min(maximum, max(count + 1, Int((Double(count) * factor).rounded(.down))))
    }

    /// Records and returns the decision to move to `count` for `reason`, with the numbers of the step
    /// judged.
    private mutating func decide(_ count: Int, _ reason: PolicyReason) -> PolicyDecision {
        remeasured = false
        lookedAgain = false
        climbLooks = 0
        target = min(max(count, 1), maximum)
        decision = PolicyDecision(count: target, reason: reason, verdict: verdict, evidence: evidence)
        return decision
    }
}
