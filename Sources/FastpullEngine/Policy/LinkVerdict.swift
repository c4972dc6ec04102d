/// What the steps measured so far say limits a download, with the numbers behind it.
///
/// Read from a step that changed the connection count: the connections that ran before the change
/// (the incumbents) either kept their rate while the total grew — the newcomers took nothing from them,
/// so *each connection has its own limit* — or lost what the newcomers gained and the total stayed
/// where it was: *a shared limit* (a link, a server's own cap, `--limit-rate`) of about the best total
/// of the last steps. A step in which the process used most of the machine's cores says *the CPU is the
/// limit*: more connections only take CPU time from the transfer.
package enum LinkVerdict: Sendable, Equatable, CustomStringConvertible {
    /// Nothing judged yet.
    case unknown
    /// Each connection carries about `bytesPerSecond` of its own; more connections carry more.
    case ownLimit(bytesPerSecond: Double)
    /// All connections together carry about `capacity` bytes per second.
    case shared(capacity: Double)
    /// The process used `share` of the machine's cores.
    case cpu(share: Double)

    package var description: String {
        switch self {
        case .unknown: return "not judged yet"
        case .ownLimit(let rate): return "each connection has its own limit (about \(ByteFormat.speed(rate)))"
        case .shared(let capacity): return "a shared limit of about \(ByteFormat.speed(capacity))"
        case .cpu(let share): return "the CPU is the limit (\(Int((share * 100).rounded())) % of the cores)"
        }
    }

    /// Whether the CPU is the limit.
    var isCPU: Bool {
        if case .cpu = self { return true }
        return false
    }

    /// Whether more connections than the fewest that reach the total only cost.
    var isShared: Bool {
        switch self {
        case .shared, .cpu: return true
        case .unknown, .ownLimit: return false
        }
    }
}

/// The numbers a decision was made on: the step before the change and the step after it.
package struct PolicyEvidence: Sendable, Equatable, CustomStringConvertible {
    /// The count the reference was measured at, and its total (bytes per second).
    var countBefore: Int
    var totalBefore: Double
    /// The count just measured, and its total.
    var count: Int
    var total: Double
    /// The share of their reference rate the incumbents kept (1: all of it).
    var incumbentsKept: Double
    /// The best total of the last steps (the shared limit's estimate).
    var capacity: Double
    /// The process's share of the machine's cores during the step.
    var cpuShare: Double

    /// The total's change against the reference: 0.15 is 15 % more.
    var gain: Double { total / max(totalBefore, 1) - 1 }

    package var description: String {
        func rate(_ value: Double) -> String { value.isFinite ? ByteFormat.speed(value) : "-" }
        func percent(_ value: Double) -> String { value.isFinite ? "\(Int((value * 100).rounded())) %" : "-" }
        return
            "\(countBefore) → \(count) connections: \(rate(totalBefore)) → \(rate(total)) (\(percent(gain))), "
            + "incumbents kept \(percent(incumbentsKept)), best total \(rate(capacity)), CPU \(percent(cpuShare))"
    }
}

/// One change of the count (or a step judged without one), with why.
package struct PolicyDecision: Sendable, Equatable {
    /// The connections to have now.
    var count: Int
    var reason: PolicyReason
    /// What the link looks like after this step.
    var verdict: LinkVerdict
    /// The numbers, when a step was judged.
    var evidence: PolicyEvidence?
}

/// Why the policy chose its count.
package enum PolicyReason: String, Sendable, Equatable {
    case start
    /// Started from what an earlier run of the same download learned.
    case remembered
    /// More connections paid: each connection has its own limit.
    case ownLimit = "each connection has its own limit"
    /// More connections did not pay: the limit is shared; fewer are tried.
    case sharedLimit = "a shared limit"
    /// The CPU was busy: fewer are tried.
    case cpuLimit = "the CPU is the limit"
    /// Fewer carried the total: fewer are kept.
    case fewerHold = "fewer hold the total"
    /// Fewer lost: back to the count that held.
    case fewerLost = "fewer lost"
    /// Fewer lost more than the cut: the level was a moment (a burst); the rise starts over.
    case levelWasAMoment = "the level was a moment"
    /// Held long enough: half again as many are tried.
    case probeUp = "probe for more"
    /// Held long enough on a shared limit: a third fewer are tried.
    case probeDown = "probe for fewer"
    /// The probe did not pay twice in a row: back.
    case probeLost = "probe lost"
    /// The total fell far below what was held: the link changed; more are tried at once.
    case fell = "the total fell"
    /// A server refused connections: held at those that work.
    case refused
    /// Less than a second's worth of bytes is left: the count holds to the end.
    case ending = "the end is near"
}
