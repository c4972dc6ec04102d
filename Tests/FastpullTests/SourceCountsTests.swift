import Testing

@testable import FastpullEngine

/// Each source of a download counted on its own: how the ceiling is shared, which connections leave
/// first, and a source that refuses more.
@Suite struct SourceCountsTests {
    /// Counts that fit under the ceiling are each source's own.
    @Test func countsThatFitAreKept() {
        let shares = SourceCounts.share(64, among: [0: (8, false), 1: (4, true)])
        #expect(shares == [0: 8, 1: 4])
    }

    /// Over the ceiling, a shared source keeps the few it needs and the others share the rest in
    /// proportion to what they want, each at least one.
    @Test func overTheCeilingTheSharedKeepTheirFewAndTheRestIsShared() {
        let shares = SourceCounts.share(64, among: [0: (64, false), 1: (2, true), 2: (32, false)])
        #expect(shares[1] == 2)
        #expect(shares[0] == 62 * 64 / 96)
        #expect(shares[2] == 62 * 32 / 96)
        #expect(shares.values.reduce(0, +) <= 64)
        let crowded = SourceCounts.share(3, among: [0: (64, false), 1: (64, false), 2: (8, true)])
        #expect(crowded[0]! >= 1 && crowded[1]! >= 1 && crowded[2]! >= 1)
        // Never more than the ceiling: with more sources than connections, the last named go without.
        let few = SourceCounts.share(2, among: [0: (4, false), 1: (4, false), 2: (4, true)])
        #expect(few.values.reduce(0, +) == 2, "\(few)")
        #expect(few[0] == 1 && few[1] == 1 && few[2] == 0, "\(few)")
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
}
