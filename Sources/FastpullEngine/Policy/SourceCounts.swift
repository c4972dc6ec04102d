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
/// the sum is more, each connection goes where it adds the most: a source whose limit is shared keeps
/// the few it needs first, one not measured yet gets one, and the rest go to the sources whose
/// connections are fastest, each up to its count; a source that refused more connections holds its
/// count at those it takes. Each source may hold as many connections as its share
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
        /// What one of its connections brings, in bytes per second; nil while unmeasured.
        var rate: Double? = nil
        /// The connections it needs when its connections' rate fell as more joined (``SourceSet``'s
        /// own reading of a shared limit, between two of its count's steps); nil while it did not.
        var need: Int? = nil
    }

    let settings: ConnectionController.Settings
    /// The most connections the download may have, all sources together.
    let ceiling: Int
    /// Each live source's own count, by source (made at its first reading; a test may set one).
    var counts: [Int: ConnectionController] = [:]
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
            // A source held below its count (the ceiling went to the others) does not run the count
            // its model judges: its steps are not measured until it does (before: a step of 8 to 64
            // measured with the 12 it was left, after its connections went to the other source, was
            // judged a loss, and the source kept 8 for two seconds).
            if let allowance = allowances[index], allowance < count.target {
                count.base = nil
                counts[index] = count
                continue
            }
            var own = sample
            own.bytes = reading.bytes
            own.perConnection = reading.perConnection
            own.retiring = sample.retiring.filter { reading.perConnection[$0] != nil }
            let before = count.model?.decision
            _ = count.observe(own)
            if let decision = count.model?.decision, decision != before { latest = (index, decision) }
            counts[index] = count
        }
        // A source whose connections' rate fell as more joined wants no more than it needs (its count
        // already holds at what a refusing one takes, above) — unless its own model found each
        // connection has its own limit: newcomers still starting lower the rate too, and that reading
        // took the connections of a per-connection source away and gave them back every few steps.
        let wants = counts.map { index, count in
            let ownLimit = if case .ownLimit = count.model?.verdict { true } else { false }
            let need = ownLimit ? nil : sources[index]?.need
            return (
                index,
                Want(
                    count: min(count.target, need ?? .max), shared: count.limitIsShared || need != nil,
                    rate: sources[index]?.rate)
            )
        }
        allowances = Self.share(ceiling, among: Dictionary(uniqueKeysWithValues: wants))
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

    /// What one source wants, for ``share(_:among:)``.
    struct Want: Sendable, Equatable {
        /// The connections its count says pay there.
        var count: Int
        /// Whether its limit is shared (its few fill it).
        var shared: Bool
        /// What one of its connections brings, in bytes per second; nil while unmeasured.
        var rate: Double?
    }

    /// Shares `ceiling` among sources that want `wants`: each gets what it wants while they fit.
    /// Else each connection goes where it adds the most: a source whose limit is shared first gets
    /// the few it needs (one more there adds nothing, and fewer lose its whole rate), one not measured
    /// yet gets one (to be measured), and the rest go to the sources whose connections are fastest,
    /// each up to what its count wants. Equal ones keep the order the sources were named in.
    static func share(_ ceiling: Int, among wants: [Int: Want]) -> [Int: Int] {
        guard wants.values.reduce(0, { $0 + $1.count }) > ceiling else { return wants.mapValues(\.count) }
        var shares = wants.mapValues { _ in 0 }
        var left = ceiling
        func give(_ index: Int, upTo count: Int) {
            let more = max(0, min(count - shares[index]!, left))
            shares[index]! += more
            left -= more
        }
        let named = wants.keys.sorted()
        for index in named where wants[index]!.shared { give(index, upTo: wants[index]!.count) }
        for index in named where !wants[index]!.shared && wants[index]!.rate == nil { give(index, upTo: 1) }
        let fastest = named.filter { !wants[$0]!.shared }.sorted {
            (wants[$0]!.rate ?? 0) > (wants[$1]!.rate ?? 0)
        }
        for index in fastest { give(index, upTo: wants[index]!.count) }
        return shares
    }
}
