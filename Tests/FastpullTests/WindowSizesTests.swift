import Testing

@testable import FastpullEngine

/// What size of window a source serves at full speed: each verdict of ``WindowSizes`` from the
/// windows that came, and the table's windows following it.
struct WindowSizesTests {
    let start = ContinuousClock.now
    let mebibyte: Int64 = 1 << 20

    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int64(seconds * 1000)) }

    /// A source whose windows come as fast at every size: one connection at a time probes a size
    /// `growth` times the proven one, and each probe that keeps the pace proves its size.
    @Test func windowsGrowOneProbeAtATimeWhileTheyKeepThePace() {
        var sizes = WindowSizes()
        #expect(sizes.allowed(for: 1) == nil)
        sizes.finished(bytes: mebibyte, asked: at(0), end: at(0.01), connections: 4)
        #expect(sizes.proven == mebibyte)
        #expect(sizes.allowed(for: 1) == WindowSizes.growth * mebibyte)
        sizes.probe = 1
        // Another connection, meanwhile, stays at the proven size.
        #expect(sizes.allowed(for: 2) == mebibyte)
        #expect(sizes.allowed(for: 1) == WindowSizes.growth * mebibyte)
        // The probe came at the pace of the proven windows that ended while it ran.
        sizes.finished(bytes: mebibyte, asked: at(0.02), end: at(0.03), connections: 4)
        sizes.probe = nil
        sizes.finished(bytes: 4 * mebibyte, asked: at(0.01), end: at(0.05), connections: 4)
        #expect(sizes.proven == 4 * mebibyte)
        #expect(!sizes.limited)
        #expect(sizes.allowed(for: 2) == WindowSizes.growth * 4 * mebibyte)
    }

    /// nginx's `limit_rate`: 1 MiB windows come at once (what the socket takes), a 4 MiB one at the
    /// limit, far slower than the 1 MiB windows that ended while it ran, over 0.1 s: the source's
    /// windows stay at 1 MiB from then on.
    @Test func aProbeFarSlowerThanItsPeersLimitsTheSize() {
        var sizes = WindowSizes()
        sizes.finished(bytes: mebibyte, asked: at(0), end: at(0.004), connections: 8)
        sizes.finished(bytes: mebibyte, asked: at(0.05), end: at(0.054), connections: 8)
        sizes.finished(bytes: 4 * mebibyte, asked: at(0.01), end: at(0.11), connections: 8)
        #expect(sizes.limited)
        #expect(sizes.proven == mebibyte)
        #expect(sizes.allowed(for: 3) == mebibyte)
    }

    /// A probe slower than its peers for less than ``WindowSizes/judgedSeconds`` (a moment's stall
    /// of a busy machine) is no verdict: neither limited nor proven.
    @Test func aBriefSlowProbeIsNoVerdict() {
        var sizes = WindowSizes()
        sizes.finished(bytes: mebibyte, asked: at(0), end: at(0.001), connections: 8)
        sizes.finished(bytes: 4 * mebibyte, asked: at(0.002), end: at(0.012), connections: 8)
        #expect(!sizes.limited)
        #expect(sizes.proven == mebibyte)
    }

    /// A probe slower than the latest proven window when the count grew meanwhile (and no proven
    /// window ended while it ran) is judged by nothing: the count took from every window's speed.
    /// It proves its size; the same with the count unchanged limits it.
    @Test func aSlowerProbeAfterTheCountGrewProvesItsSize() {
        var grown = WindowSizes()
        grown.finished(bytes: mebibyte, asked: at(0), end: at(0.002), connections: 4)
        grown.finished(bytes: 4 * mebibyte, asked: at(0.01), end: at(0.1), connections: 32)
        #expect(!grown.limited)
        #expect(grown.proven == 4 * mebibyte)

        var same = WindowSizes()
        same.finished(bytes: mebibyte, asked: at(0), end: at(0.002), connections: 4)
        same.finished(bytes: 4 * mebibyte, asked: at(0.01), end: at(0.1), connections: 4)
        #expect(same.limited)
        #expect(same.proven == mebibyte)
    }

    /// A probe still running at more than twice what the proven windows' speed needs for it (and at
    /// least ``WindowSizes/judgedSeconds``) is late: the size is limited at once. Not before.
    @Test func aLateProbeIsJudgedBeforeItEnds() {
        var sizes = WindowSizes()
        sizes.finished(bytes: mebibyte, asked: at(0), end: at(0.004), connections: 8)
        // 4 MiB at 1 MiB per 4 ms needs 16 ms: late after 32 ms.
        let early = sizes.judgeLate(size: 4 * mebibyte, asked: at(0.01), now: at(0.03), connections: 8)
        #expect(!early)
        #expect(!sizes.limited)
        let late = sizes.judgeLate(size: 4 * mebibyte, asked: at(0.01), now: at(0.05), connections: 8)
        #expect(late)
        #expect(sizes.limited)
        #expect(sizes.allowed(for: 1) == mebibyte)
    }

    /// A probe running long while the count changed, with no proven window ended since it was
    /// asked, is no verdict: the count, not its size, may have slowed it.
    @Test func aLongProbeAfterTheCountChangedIsNotLate() {
        var sizes = WindowSizes()
        sizes.finished(bytes: mebibyte, asked: at(0), end: at(0.004), connections: 4)
        let late = sizes.judgeLate(size: 4 * mebibyte, asked: at(0.01), now: at(0.2), connections: 32)
        #expect(!late)
        #expect(!sizes.limited)
    }

    /// In the table, one connection at a time probes: the first to ask gets a window of `growth`
    /// times the proven size, the next (asking for a new window or ahead) the proven size; once the
    /// probe's window ends, the next to ask may probe.
    @Test func oneConnectionAtATimeProbesInTheTable() {
        var table = SegmentTable(segments: [Segment(start: 0, end: 256 * mebibyte)])
        var sizes = WindowSizes()
        sizes.finished(bytes: mebibyte, asked: at(0), end: at(0.004), connections: 2)
        table.windowSizes[-1] = sizes
        for worker in [1, 2] {
            table.join(worker, now: at(0.01))
            table.connections[worker]?.rate = 200e6
            table.connections[worker]?.latestRate = 200e6
        }
        let first = table.nextWindow(for: 1, now: at(0.01))
        #expect(first?.0.range.count == Int(WindowSizes.growth * mebibyte))
        #expect(table.windowSizes[-1]?.probe == 1)
        let second = table.nextWindow(for: 2, now: at(0.01))
        #expect(second?.0.range.count == Int(mebibyte))
        let ahead = table.windowAhead(for: 2)
        #expect(ahead?.range.count == Int(mebibyte))
        // The probe's window ends (its connection asks again): the probe is free.
        _ = table.nextWindow(for: 1, now: at(0.05))
        #expect(table.windowSizes[-1]?.probe != 2)
    }

    /// The table follows the verdict: once its source's size is limited, a connection whose speed
    /// asks for far larger windows gets the proven size; and a probe's window, cut, leaves the probe.
    @Test func theTableSizesWindowsByTheVerdict() {
        var table = SegmentTable(segments: [Segment(start: 0, end: 256 * mebibyte)])
        let worker = 1
        let now = at(0)
        table.join(worker, now: now)
        table.connections[worker]?.rate = 200e6
        table.connections[worker]?.latestRate = 200e6
        let unlimited = table.windowSize(for: worker)
        #expect(unlimited > 4 * mebibyte)
        table.windowSizes[-1] = {
            var sizes = WindowSizes()
            sizes.finished(bytes: mebibyte, asked: at(0), end: at(0.004), connections: 1)
            sizes.finished(bytes: 4 * mebibyte, asked: at(0.01), end: at(0.11), connections: 1)
            return sizes
        }()
        #expect(table.windowSize(for: worker) == mebibyte)
        table.windowSizes[-1]?.probe = worker
        table.leave(worker)
        #expect(table.windowSizes[-1]?.probe == nil)
    }
}
