/// The connection count of a download with several sources, counted per source.
///
/// **The model.** Sources differ in what limits them: one gives each connection a rate of its own,
/// another serves every connection through one shared link or cap. One count for the download cannot
/// tell them apart: more connections pay on the first and only cost on the second, and a connection
/// parked on the second is one the first lacks. So each source is judged on its own, by the same model
/// as a download of one source (``ConnectionPolicy``), from its own connections' bytes
/// (``SegmentTable/bytesBySource``).
///
/// **The policy.** Each live source has its own count: it starts with the few a download starts with
/// and moves as that source's steps say. The download's count is the sum, at most the ceiling; where
/// the sum is more, a source whose limit is shared keeps the few it needs first, and the others share
/// the rest in proportion to their counts; a source that refused more connections holds its count at
/// those it takes. Each source may hold as many connections as its share
/// (its *allowance*, ``SourceSet/allow(_:)``): a new connection goes to a source with room, and one
/// beyond a source's allowance ends its window soon and moves where there is room.
package struct SourceCounts: Sendable {
    /// What the download measured of one source at a tick.
    struct Reading: Sendable, Equatable {
        /// Whether it still serves.
        var live: Bool
        /// Bytes it brought in this run.
        var bytes: Int64
        /// What each connection fetching from it now brought from it.
        var perConnection: [Int: Int64]
        /// The most connections it takes from this client, once it refused one more.
        var capacity: Int? = nil
        /// The connections bound to it now.
        var workers: Set<Int> = []
    }

    let settings: ConnectionController.Settings
    /// The most connections the download may have, all sources together.
    let ceiling: Int
    /// Each live source's own count, by source.
    private(set) var counts: [Int: ConnectionController] = [:]
    /// How many connections each source may hold now, by source.
    private(set) var allowances: [Int: Int] = [:]
    /// The latest source whose count changed, and why.
    private(set) var latest: (source: Int, decision: PolicyDecision)?

    /// Counts for the sources to come, together at most `ceiling`.
    init(ceiling: Int, settings: ConnectionController.Settings) {
        self.ceiling = max(ceiling, 1)
        self.settings = settings
    }

    /// The download's count: the sum of the allowances.
    var total: Int { allowances.values.reduce(0, +) }

    /// How soon the loop should look again: as soon as the soonest source wants to.
    var tickInterval: Duration {
        counts.values.map(\.tickInterval).min() ?? .milliseconds(5)
    }

    /// Whether some source's count is still rising.
    var isRising: Bool { counts.values.contains { $0.phase == .ramping } }

    /// Whether every live source's limit was found shared (windows are then small everywhere).
    var allShared: Bool { !counts.isEmpty && counts.values.allSatisfy(\.limitIsShared) }

    /// What the counts are at, in words: each source's count and reason.
    var reasonText: String {
        counts.keys.sorted().map { "source \($0): \(allowances[$0] ?? 0), \(counts[$0]!.reasonText)" }
            .joined(separator: "; ")
    }

    /// Feeds the download's progress (`sample`, whose `retiring` are the connections asked to leave)
    /// and each source's; returns the download's count.
    mutating func observe(_ sample: ConnectionController.Sample, sources: [Int: Reading]) -> Int {
        for (index, reading) in sources.sorted(by: { $0.key < $1.key }) {
            guard reading.live else {
                counts[index] = nil
                continue
            }
            var count = counts[index] ?? ConnectionController(modelUpTo: ceiling, settings: settings)
            // A source that refused more connections (a mirror's limit per client) holds its count at
            // those it takes, as a download of one source does: the step up was not the link's answer.
            if let capacity = reading.capacity, count.target > capacity { count.refused(working: capacity) }
            var own = sample
            own.bytes = reading.bytes
            own.perConnection = reading.perConnection
            own.retiring = sample.retiring.filter { reading.perConnection[$0] != nil }
            let before = count.model?.decision
            _ = count.observe(own)
            if let decision = count.model?.decision, decision != before { latest = (index, decision) }
            counts[index] = count
        }
        // A source that refused more connections takes no more than it holds (``SourceSet/refused(_:worker:)``).
        let wanted = counts.map { index, count in
            (index, (min(count.target, sources[index]?.capacity ?? .max), count.limitIsShared))
        }
        allowances = Self.share(ceiling, among: Dictionary(uniqueKeysWithValues: wanted))
        return total
    }

    /// The connections to retire first when the download's count falls: those a source holds beyond
    /// its allowance (every one of a source no longer live), newest first.
    func beyondAllowances(_ sources: [Int: Reading]) -> [Int] {
        var beyond: [Int] = []
        for (index, reading) in sources {
            let extra = reading.workers.count - (allowances[index] ?? 0)
            if extra > 0 { beyond += reading.workers.sorted().suffix(extra) }
        }
        return beyond.sorted(by: >)
    }

    /// Shares `ceiling` among sources that want `counts` (each with whether its limit is shared):
    /// each gets what it wants while they fit; else the shared ones first, the rest in proportion to
    /// what they want, each at least one.
    static func share(_ ceiling: Int, among counts: [Int: (wanted: Int, shared: Bool)]) -> [Int: Int] {
        let wanted = counts.values.reduce(0) { $0 + $1.wanted }
        guard wanted > ceiling else { return counts.mapValues(\.wanted) }
        var shares: [Int: Int] = [:]
        var left = ceiling
        let others = counts.filter { !$0.value.shared }
        for (index, count) in counts.sorted(by: { $0.key < $1.key }) where count.shared {
            shares[index] = max(1, min(count.wanted, left - others.count))
            left -= shares[index]!
        }
        let rest = others.values.reduce(0) { $0 + $1.wanted }
        for (index, count) in others.sorted(by: { $0.key < $1.key }) {
            shares[index] = max(1, count.wanted * max(left, 0) / max(rest, 1))
        }
        // More sources than the ceiling has connections: the last named go without.
        var excess = shares.values.reduce(0, +) - ceiling
        for index in shares.keys.sorted(by: >) where excess > 0 {
            let cut = min(excess, shares[index]!)
            shares[index]! -= cut
            excess -= cut
        }
        return shares
    }
}
