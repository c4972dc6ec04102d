import Testing

@testable import FastpullEngine

/// Each source of a download counted on its own: how the ceiling is shared, which connections leave
/// first, and a source that refuses more.
@Suite struct SourceCountsTests {
    typealias Want = SourceCounts.Want

    /// Counts that fit under the ceiling are each source's own.
    @Test func countsThatFitAreKept() {
        let shares = SourceCounts.share(
            64, among: [0: Want(count: 8, shared: false), 1: Want(count: 4, shared: true)])
        #expect(shares == [0: 8, 1: 4])
    }

    /// Over the ceiling each connection goes where it adds the most: a shared source keeps the few it
    /// needs, an unmeasured one gets one to be measured, and the rest go to the fastest connections
    /// first, whatever order the sources were named in.
    @Test func overTheCeilingConnectionsGoWhereTheyAddTheMost() {
        let shares = SourceCounts.share(
            64,
            among: [
                0: Want(count: 64, shared: false, rate: 200_000), 1: Want(count: 2, shared: true, rate: 9e6),
                2: Want(count: 64, shared: false, rate: 3e6), 3: Want(count: 64, shared: false),
            ])
        #expect(shares == [0: 0, 1: 2, 2: 61, 3: 1], "\(shares)")
        // Eight connections over four sources limiting each connection: all to the fastest (2 per
        // source, as a split by count gave, took three times as long as the fastest alone).
        let few = SourceCounts.share(
            8,
            among: [
                0: Want(count: 64, shared: false, rate: 200_000),
                1: Want(count: 64, shared: false, rate: 3e6),
                2: Want(count: 64, shared: false, rate: 100_000),
                3: Want(count: 64, shared: false, rate: 1e6),
            ])
        #expect(few == [0: 0, 1: 8, 2: 0, 3: 0], "\(few)")
        // Never more than the ceiling.
        let crowded = SourceCounts.share(
            2,
            among: [
                0: Want(count: 4, shared: false), 1: Want(count: 4, shared: false),
                2: Want(count: 4, shared: true),
            ])
        #expect(crowded.values.reduce(0, +) == 2, "\(crowded)")
        #expect(crowded[2] == 2, "\(crowded)")
    }

    /// A new source starts with the few a download starts with; a source no longer live has no count,
    /// and its connections are the first to leave, then those beyond a source's allowance.
    @Test func aDroppedSourcesConnectionsLeaveFirst() {
        var counts = SourceCounts(ceiling: 64, settings: ConnectionController.Settings())
        let now = ContinuousClock.now
        let sample = ConnectionController.Sample(now: now, bytes: 0, cpuSeconds: 0)
        var readings: [Int: SourceCounts.Reading] = [
            0: .init(live: true, bytes: 0, perConnection: [:], workers: [0, 1, 2, 3]),
            1: .init(live: true, bytes: 0, perConnection: [:], workers: [4, 5, 6, 7]),
        ]
        #expect(counts.observe(sample, sources: readings) == 8)
        #expect(counts.allowances == [0: 4, 1: 4])
        readings[1]?.live = false
        #expect(counts.observe(sample, sources: readings) == 4)
        #expect(counts.beyondAllowances(readings) == [7, 6, 5, 4])
        readings[0]?.workers = [0, 1, 2, 3, 8]
        #expect(counts.beyondAllowances(readings) == [8, 7, 6, 5, 4])
    }

    /// A source that refused more connections holds its count at those it takes; the others keep
    /// theirs.
    @Test func aSourceThatRefusesMoreHoldsAtWhatItTakes() {
        var counts = SourceCounts(ceiling: 64, settings: ConnectionController.Settings())
        let sample = ConnectionController.Sample(now: .now, bytes: 0, cpuSeconds: 0)
        let readings: [Int: SourceCounts.Reading] = [
            0: .init(live: true, bytes: 0, perConnection: [:], capacity: 2),
            1: .init(live: true, bytes: 0, perConnection: [:]),
        ]
        #expect(counts.observe(sample, sources: readings) == 6)
        #expect(counts.allowances == [0: 2, 1: 4])
        #expect(counts.counts[0]?.reasonText == "refused")
    }

    /// A source whose connections' rate fell as more joined (the source set's reading, between two
    /// of its count's steps) keeps only the few it needs, even when each of its connections is still
    /// the fastest: one more there adds nothing.
    @Test func aSourceWhoseRateFellKeepsWhatItNeeds() {
        var counts = SourceCounts(ceiling: 8, settings: ConnectionController.Settings())
        let sample = ConnectionController.Sample(now: .now, bytes: 0, cpuSeconds: 0)
        let readings: [Int: SourceCounts.Reading] = [
            0: .init(live: true, bytes: 0, perConnection: [:], rate: 12e6, need: 2),
            1: .init(live: true, bytes: 0, perConnection: [:], rate: 5e6),
        ]
        #expect(counts.observe(sample, sources: readings) == 6)
        #expect(counts.allowances == [0: 2, 1: 4])
    }

    /// A source held below its count (the ceiling went to the others) is not measured while it is:
    /// a step measured with the few it was left is not a step of its count (from a two-source trace:
    /// 8 → 64 measured with 12, judged a loss, and the source kept 8 for two seconds).
    @Test func aSourceHeldBelowItsCountIsNotMeasured() {
        var counts = SourceCounts(ceiling: 6, settings: ConnectionController.Settings())
        let start = ContinuousClock.now
        let readings: [Int: SourceCounts.Reading] = [
            0: .init(live: true, bytes: 0, perConnection: [:]),
            1: .init(live: true, bytes: 0, perConnection: [:]),
        ]
        #expect(counts.observe(.init(now: start, bytes: 0, cpuSeconds: 0), sources: readings) == 6)
        #expect(counts.allowances == [0: 4, 1: 2])
        let flowing: [Int: SourceCounts.Reading] = [
            0: .init(live: true, bytes: 4000, perConnection: [0: 1000, 1: 1000, 2: 1000, 3: 1000]),
            1: .init(live: true, bytes: 2000, perConnection: [4: 1000, 5: 1000]),
        ]
        _ = counts.observe(.init(now: start + .milliseconds(5), bytes: 6000, cpuSeconds: 0), sources: flowing)
        #expect(counts.counts[0]?.base != nil, "the source at its count is measured")
        #expect(counts.counts[1]?.base == nil, "a source held below its count was measured")
    }

    /// A source whose own model found each connection has its own limit is not cut to the source
    /// set's "need" (its connections' rate fell as more joined: newcomers still in TCP's slow start
    /// do that too). Before: a per-connection source's allowance swung 56 → 30 → 10 → 56 every few
    /// steps. A source not judged so still is.
    @Test func aSourceFoundPerConnectionIsNotCutToTheSetsNeed() {
        var counts = SourceCounts(ceiling: 64, settings: ConnectionController.Settings())
        let memory = LinkMemory(
            connections: 32, bytesPerSecond: 160_000_000, shared: false, learnedAt: LinkMemory.now)
        counts.counts[0] = ConnectionController(modelUpTo: 64, remembering: memory)
        let sample = ConnectionController.Sample(now: .now, bytes: 0, cpuSeconds: 0)
        let readings: [Int: SourceCounts.Reading] = [
            0: .init(live: true, bytes: 0, perConnection: [:], rate: 5e6, need: 10),
            1: .init(live: true, bytes: 0, perConnection: [:], rate: 2e6, need: 3),
        ]
        _ = counts.observe(sample, sources: readings)
        #expect(counts.allowances[0] == 32, "\(counts.allowances)")
        #expect(counts.allowances[1] == 3, "\(counts.allowances)")
    }
}
