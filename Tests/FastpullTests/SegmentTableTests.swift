import Testing

@testable import Fastpull

@Suite("SegmentTable: the scheduler's state machine")
struct SegmentTableTests {
    let mebibyte: Int64 = 1 << 20
    let t0 = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant { t0 + .milliseconds(Int64(seconds * 1000)) }

    /// A table of pieces with these lengths; windows start at 1 MiB unless the settings say otherwise.
    func table(_ lengths: [Int64], settings: SegmentTable.Settings = .init(initialWindow: 1 << 20))
        -> SegmentTable
    {
        var start: Int64 = 0
        return SegmentTable(
            segments: lengths.map { length in
                defer { start += length }
                return Segment(start: start, end: start + length)
            }, settings: settings)
    }

    /// Claims and commits `count` bytes for `worker` as a fetcher would; returns what was allowed.
    @discardableResult
    func write(_ state: inout SegmentTable, _ worker: Int, _ count: Int64, at time: Double) -> Int64 {
        let allowed = state.claim(worker, count: count)
        state.commit(worker, count: allowed, now: at(time))
        return allowed
    }

    /// The invariant that keeps bytes from being written twice: pieces tile the file, in order.
    func checkTiling(_ state: SegmentTable, size: Int64) {
        var expected: Int64 = 0
        for piece in state.pieces {
            #expect(piece.start == expected)
            #expect(piece.end > piece.start)
            #expect(piece.claimed >= piece.segment.resumeOffset && piece.claimed <= piece.end)
            expected = piece.end
        }
        #expect(expected == size)
    }

    @Test func untouchedFollowingPiecesJoinAWindowUpToTheLimit() throws {
        // Eight 1 MiB pieces; a connection of unknown speed starts with a 4 MiB window.
        var state = table(
            Array(repeating: mebibyte, count: 8),
            settings: .init(initialWindow: 4 * mebibyte, maximumMergedPiece: 3 * mebibyte))
        let assigned = state.nextWindow(for: 0, now: at(0))
        let (window, how) = try #require(assigned)
        #expect(how == .waiting)
        // Capped by the merge limit: three pieces become one request.
        #expect(window.range == 0..<3 * mebibyte)
        #expect(state.pieces.count == 6)
        checkTiling(state, size: 8 * mebibyte)
        // A piece that already has bytes is never joined to the one before.
        var resumed = SegmentTable(segments: [
            Segment(start: 0, end: 10), Segment(start: 10, end: 20, written: 5), Segment(start: 20, end: 30),
        ])
        let first = resumed.nextWindow(for: 0, now: at(0))
        #expect(first?.0.range == 0..<10)
    }

    @Test func assignsWaitingPiecesInFileOrder() throws {
        var state = table([10 * mebibyte, 10 * mebibyte, 10 * mebibyte])
        let assigned1 = state.nextWindow(for: 0, now: at(0))
        let first = try #require(assigned1)
        let assigned2 = state.nextWindow(for: 1, now: at(0))
        let second = try #require(assigned2)
        #expect(first.0.piece == 0 && first.1 == .waiting)
        #expect(second.0.piece == 10 * mebibyte)
        // A connection of unknown speed gets the initial window.
        #expect(first.0.range == 0..<mebibyte)
    }

    @Test func windowsGrowWithMeasuredSpeedAndContinueTheSamePiece() throws {
        var state = table([64 * mebibyte])
        _ = state.nextWindow(for: 0, now: at(0))
        write(&state, 0, mebibyte, at: 0.5)  // 2 MiB/s measured
        let assigned3 = state.nextWindow(for: 0, now: at(0.5))
        let next = try #require(assigned3)
        #expect(next.1 == .continued)
        #expect(next.0.range.lowerBound == mebibyte)
        #expect(next.0.range.count == Int(2 * mebibyte))
    }

    @Test func frontierFollowsTheContiguousPrefix() {
        var state = table(
            [10, 10, 10], settings: .init(minimumSplit: 100, initialWindow: 1 << 20, maximumMergedPiece: 1))
        for worker in 0..<3 { _ = state.nextWindow(for: worker, now: at(0)) }
        write(&state, 1, 10, at: 0.1)
        #expect(state.frontier == 0)
        write(&state, 0, 4, at: 0.1)
        #expect(state.frontier == 4)
        write(&state, 0, 6, at: 0.2)
        #expect(state.frontier == 20)
        write(&state, 2, 10, at: 0.2)
        #expect(state.frontier == 30)
        #expect(state.isComplete)
        #expect(state.writtenBytes == 30)
    }

    @Test func idleConnectionStealsTheUpperHalfOfTheLargestRange() throws {
        var state = table([8 * mebibyte, 2 * mebibyte])
        _ = state.nextWindow(for: 0, now: at(0))  // [0, 1 MiB) window of the 8 MiB piece
        _ = state.nextWindow(for: 1, now: at(0))
        write(&state, 1, mebibyte, at: 0.1)
        write(&state, 1, mebibyte, at: 0.2)  // worker 1 finished its piece
        let assigned4 = state.nextWindow(for: 1, now: at(0.2))
        let (window, how) = try #require(assigned4)
        // Unclaimed of piece 0 is [0, 8 MiB); the midpoint is 4 MiB, outside worker 0's window.
        #expect(how == .stolen(from: 0, at: 4 * mebibyte))
        #expect(window.range.lowerBound == 4 * mebibyte)
        #expect(state.piece(of: 0)?.end == 4 * mebibyte)
        checkTiling(state, size: 10 * mebibyte)
    }

    @Test func aStealNeverCutsIntoTheOwnersWindow() throws {
        var state = table(
            [3 * mebibyte, mebibyte], settings: .init(minimumSplit: mebibyte / 4, initialWindow: 2 * mebibyte)
        )
        _ = state.nextWindow(for: 0, now: at(0))  // window [0, 2 MiB)
        _ = state.nextWindow(for: 1, now: at(0))
        write(&state, 1, mebibyte, at: 0.1)
        let assigned5 = state.nextWindow(for: 1, now: at(0.1))
        let (_, how) = try #require(assigned5)
        #expect(how == .stolen(from: 0, at: 2 * mebibyte))
    }

    @Test func noStealBelowTheMinimumSplit() {
        var state = table([mebibyte + 10, mebibyte])
        _ = state.nextWindow(for: 0, now: at(0))
        _ = state.nextWindow(for: 1, now: at(0))
        write(&state, 1, mebibyte, at: 0.1)
        // Piece 0's upper half would be 0.5 MiB: too small to steal; speeds unknown: no hedge.
        #expect(state.nextWindow(for: 1, now: at(0.1)) == nil)
    }

    @Test func theOwnerStopsExactlyAtTheShrunkenEnd() {
        var state = table([4 * mebibyte], settings: .init(minimumSplit: mebibyte, initialWindow: mebibyte))
        _ = state.nextWindow(for: 0, now: at(0))
        let stolen = state.nextWindow(for: 1, now: at(0))  // steals [2 MiB, 4 MiB)
        #expect(stolen?.1 == .stolen(from: 0, at: 2 * mebibyte))
        #expect(state.piece(of: 0)?.end == 2 * mebibyte)
        write(&state, 0, mebibyte, at: 0.1)
        _ = state.nextWindow(for: 0, now: at(0.1))
        // Worker 0 may claim only up to its new end, never into the thief's range.
        #expect(write(&state, 0, 3 * mebibyte, at: 0.2) == mebibyte)
        #expect(state.claim(0, count: 1) == 0)
        checkTiling(state, size: 4 * mebibyte)
    }

    @Test func aSlowTailIsHedgedByAFastIdleConnection() throws {
        var state = table([2 * mebibyte, 2 * mebibyte])
        _ = state.nextWindow(for: 0, now: at(0))  // slow one
        _ = state.nextWindow(for: 1, now: at(0))  // fast one
        write(&state, 0, 100_000, at: 1)  // 100 kB/s
        for step in 1...2 { write(&state, 1, mebibyte, at: 0.25 * Double(step)) }  // 4 MiB/s, done
        let assigned6 = state.nextWindow(for: 1, now: at(1))
        let (window, how) = try #require(assigned6)
        guard case .hedged(let victim, let cut) = how else {
            Issue.record("expected a hedge, got \(how)")
            return
        }
        #expect(victim == 0)
        // The slow owner keeps about a quarter second of its speed past what it claimed.
        #expect(cut == 100_000 + 25_000)
        #expect(window.range.lowerBound == cut)
        #expect(state.piece(of: 0)?.end == cut)
        checkTiling(state, size: 4 * mebibyte)
    }

    @Test func noHedgeWhenTheOwnerIsNotMuchSlower() throws {
        var state = table(
            [2 * mebibyte, 2 * mebibyte], settings: .init(minimumSplit: 4 * mebibyte, initialWindow: mebibyte)
        )
        _ = state.nextWindow(for: 0, now: at(0))
        _ = state.nextWindow(for: 1, now: at(0))
        write(&state, 0, mebibyte, at: 0.5)  // 2 MiB/s
        write(&state, 1, mebibyte, at: 0.3)
        write(&state, 1, mebibyte, at: 0.5)  // 4 MiB/s, done
        #expect(state.nextWindow(for: 1, now: at(0.5)) == nil)
    }

    @Test func aStalledConnectionGivesItsRangeBack() throws {
        var state = table([4 * mebibyte], settings: .init(stallTimeout: .seconds(10)))
        _ = state.nextWindow(for: 0, now: at(0))
        write(&state, 0, 1000, at: 1)
        #expect(state.stalledConnections(now: at(10.5)).isEmpty)
        #expect(state.stalledConnections(now: at(11)) == [0])
        // The range beyond what it wrote waits for another connection.
        let assigned7 = state.nextWindow(for: 1, now: at(11))
        let (window, how) = try #require(assigned7)
        #expect(how == .waiting)
        #expect(window.range.lowerBound == 1000)
        #expect(state.claim(0, count: 10) == 0)
        checkTiling(state, size: 4 * mebibyte)
    }

    /// One connection in four at 1/20 of the others' speed: after the slow grace it gives its range
    /// back (to reconnect); the fast ones keep theirs.
    @Test func aFarSlowerConnectionGivesItsRangeBackAfterTheGrace() throws {
        var state = table(Array(repeating: 64 * mebibyte, count: 4))
        for worker in 0..<4 { _ = state.nextWindow(for: worker, now: at(0)) }
        for step in 1...8 {
            let time = Double(step) * 0.25
            for worker in 0..<3 { write(&state, worker, 2 * mebibyte, at: time) }  // 8 MiB/s
            write(&state, 3, 100_000, at: time)  // 0.4 MB/s
            let stalled = state.stalledConnections(now: at(time))
            if time < 1.25 {  // slow from its first measurement at 0.25 s, plus the 1 s grace
                #expect(stalled.isEmpty, "at \(time)")
            } else if !stalled.isEmpty {
                #expect(stalled == [3], "at \(time)")
                #expect(state.claim(3, count: 10) == 0)
                let next = state.nextWindow(for: 3, now: at(time))
                let (window, how) = try #require(next)
                // Its range waits from its first unwritten byte, and it (on a new connection) takes it.
                #expect(how == .waiting)
                #expect(window.range.lowerBound == 192 * mebibyte + 500_000)
                checkTiling(state, size: 256 * mebibyte)
                return
            }
        }
        Issue.record("the slow connection was never replaced")
    }

    @Test func slownessNeedsPeersToCompareWith() {
        var state = table([64 * mebibyte, 64 * mebibyte])
        for worker in 0..<2 { _ = state.nextWindow(for: worker, now: at(0)) }
        for step in 1...12 {
            let time = Double(step) * 0.25
            write(&state, 0, 2 * mebibyte, at: time)
            write(&state, 1, 100_000, at: time)
            #expect(state.stalledConnections(now: at(time)).isEmpty)
        }
    }

    /// A connection retired because fewer do as well finishes the window the server is already
    /// sending (cutting it would only waste those bytes); the rest of its range goes to the others.
    @Test func aReleasedConnectionFinishesItsWindow() throws {
        var state = table([8 * mebibyte])
        let assigned = state.nextWindow(for: 0, now: at(0))
        let (first, _) = try #require(assigned)
        write(&state, 0, 1000, at: 0.1)
        state.release(0)
        // The rest of its window is still its own; nothing past it is.
        #expect(write(&state, 0, first.range.count.int64, at: 0.2) == first.range.count.int64 - 1000)
        #expect(state.claim(0, count: 10) == 0)
        let next = state.nextWindow(for: 1, now: at(0.2))
        let (window, how) = try #require(next)
        #expect(how == .waiting)
        #expect(window.range.lowerBound == first.range.upperBound)
        checkTiling(state, size: 8 * mebibyte)
    }

    /// Even before its first byte arrives: the request is out, the server is sending.
    @Test func aReleasedConnectionWithAWindowInFlightKeepsIt() throws {
        var state = table([8 * mebibyte])
        let assigned = state.nextWindow(for: 0, now: at(0))
        let (first, _) = try #require(assigned)
        state.release(0)
        let next = state.nextWindow(for: 1, now: at(0.1))
        let (window, _) = try #require(next)
        #expect(window.range.lowerBound == first.range.upperBound)
        #expect(state.claim(0, count: 10) == 10)
        checkTiling(state, size: 8 * mebibyte)
    }

    @Test func aConnectionStalledBeforeItsFirstByteGivesBackEverything() throws {
        var state = table([4 * mebibyte], settings: .init(stallTimeout: .seconds(1)))
        _ = state.nextWindow(for: 0, now: at(0))
        #expect(state.stalledConnections(now: at(2)) == [0])
        let assigned8 = state.nextWindow(for: 1, now: at(2))
        let (window, _) = try #require(assigned8)
        #expect(window.range.lowerBound == 0)
        #expect(state.pieces.count == 1)
    }

    @Test func leavingReturnsTheRangeAtItsFirstUnwrittenByte() throws {
        var state = table(
            [10, 10], settings: .init(minimumSplit: 100, initialWindow: 1 << 20, maximumMergedPiece: 1))
        _ = state.nextWindow(for: 0, now: at(0))
        write(&state, 0, 3, at: 0.1)
        _ = state.claim(0, count: 2)  // claimed, never written: the connection died mid-write
        state.leave(0)
        let assigned9 = state.nextWindow(for: 1, now: at(0.2))
        let (window, how) = try #require(assigned9)
        #expect(how == .waiting)
        #expect(window.range == 3..<10)
    }

    @Test func completedSegmentsFromAResumeAreNotAssigned() throws {
        var state = SegmentTable(segments: [
            Segment(start: 0, end: 10, written: 10), Segment(start: 10, end: 20, written: 4),
        ])
        #expect(state.frontier == 14)
        let assigned10 = state.nextWindow(for: 0, now: at(0))
        let (window, _) = try #require(assigned10)
        #expect(window.range == 14..<20)
        #expect(state.nextWindow(for: 1, now: at(0)) == nil)
    }

    @Test func emptyTableIsComplete() {
        var state = table([])
        #expect(state.isComplete)
        #expect(state.frontier == 0)
        #expect(state.nextWindow(for: 0, now: at(0)) == nil)
        #expect(!state.hasWorkForAnotherConnection)
    }

    @Test func randomScheduleNeverOverlapsAndCompletes() {
        // Many connections at different speeds, with steals, hedges and leaves, in a seeded order:
        // every byte is claimed exactly once and the file completes.
        var generator = SplitMix(seed: 42)
        let size: Int64 = 40 * mebibyte
        var state = table(Array(repeating: 4 * mebibyte, count: 10))
        var claimedOwner = [Int64: Int]()  // 64 KiB block -> claims
        var time = 0.0
        var rounds = 0
        while !state.isComplete && rounds < 100_000 {
            rounds += 1
            time += 0.01
            let worker = Int(generator.next() % 6)
            if state.piece(of: worker) == nil || state.piece(of: worker)!.unclaimed == 0 {
                _ = state.nextWindow(for: worker, now: at(time))
            }
            guard let piece = state.piece(of: worker) else { continue }
            let offset = piece.claimed
            let want = Int64(generator.next() % UInt64(256 << 10)) + 1
            let allowed = state.claim(worker, count: worker == 5 ? min(want, 4096) : want)
            var block = offset
            while block < offset + allowed {
                claimedOwner[block, default: 0] += 1
                block += 1 << 12
            }
            state.commit(worker, count: allowed, now: at(time))
            if generator.next() % 500 == 0 { state.leave(worker) }
        }
        #expect(state.isComplete)
        #expect(state.writtenBytes == size)
        checkTiling(state, size: size)
        #expect(claimedOwner.values.allSatisfy { $0 <= 1 })
    }

    // MARK: - The horizon (outputs that take bytes in order)

    /// No window reaches past the horizon; a connection whose next bytes lie past it is told to wait
    /// (not that the work is done), and gets them once the horizon moves.
    @Test func windowsStayWithinTheHorizon() throws {
        var state = table(Array(repeating: 4 * mebibyte, count: 4))
        state.horizon = 3 * mebibyte / 2
        let assigned = state.nextWindow(for: 0, now: at(0))
        let (first, _) = try #require(assigned)
        #expect(first.range.upperBound <= 3 * mebibyte / 2)
        // Nothing else starts within the horizon: the others wait, they are not finished.
        #expect(state.nextWindow(for: 1, now: at(0)) == nil)
        #expect(state.isHeldByHorizon)
        write(&state, 0, first.range.count.int64, at: 0.1)
        // The owner's own piece continues only inside the horizon too.
        let stuck = state.nextWindow(for: 0, now: at(0.1))
        if let (window, _) = stuck {
            #expect(window.range.upperBound <= 3 * mebibyte / 2)
        }
        state.horizon = 9 * mebibyte
        var ends: [Int64] = []
        for worker in 0..<3 {
            if let (window, _) = state.nextWindow(for: worker, now: at(0.2)) {
                ends.append(window.range.upperBound)
            }
        }
        #expect(!ends.isEmpty && ends.allSatisfy { $0 <= 9 * mebibyte }, "\(ends)")
        checkTiling(state, size: 16 * mebibyte)
    }

    /// A steal or a hedge never starts at or past the horizon either.
    @Test func stealsAndHedgesStayWithinTheHorizon() throws {
        var state = table([16 * mebibyte])
        let assigned = state.nextWindow(for: 0, now: at(0))
        let (window, _) = try #require(assigned)
        write(&state, 0, window.range.count.int64 / 2, at: 0.5)
        state.horizon = window.range.upperBound
        // The only piece is owned; what is left of it lies past the owner's window, beyond the horizon.
        #expect(state.nextWindow(for: 1, now: at(0.6)) == nil)
        #expect(state.isHeldByHorizon)
        state.horizon = nil
        #expect(state.nextWindow(for: 1, now: at(0.6)) != nil)
    }
}

/// A small deterministic generator for reproducible schedules.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("ConnectionRamp")
struct ConnectionRampTests {
    let t0 = ContinuousClock.now
    func at(_ seconds: Double) -> ContinuousClock.Instant { t0 + .milliseconds(Int64(seconds * 1000)) }

    @Test func fixedNeverChanges() {
        var ramp = ConnectionRamp(fixed: 4)
        #expect(ramp.observe(written: 0, hashed: 0, now: at(0)) == 4)
        #expect(ramp.observe(written: 1 << 30, hashed: 1 << 30, now: at(1)) == 4)
        ramp.refused(working: 2)
        #expect(ramp.target == 2)
    }

    @Test func rampsWhileThroughputImprovesThenSettles() {
        var ramp = ConnectionRamp(automaticUpTo: 64, work: 100)
        #expect(ramp.target == ConnectionRamp.initialAuto)
        _ = ramp.observe(written: 0, hashed: 0, now: at(0))
        // 60 MB/s with 6 connections: the first measurement doubles them.
        #expect(ramp.observe(written: 15_000_000, hashed: 15_000_000, now: at(0.25)) == 12)
        // 100 MB/s: +67%, double again.
        #expect(ramp.observe(written: 40_000_000, hashed: 40_000_000, now: at(0.5)) == 24)
        // 105 MB/s: +5% only: back to 12, and try half of that.
        #expect(ramp.observe(written: 66_250_000, hashed: 66_250_000, now: at(0.75)) == 6)
        #expect(ramp.phase == .trimming)
        // One step for the six that stay to take over the others' ranges: not measured.
        #expect(ramp.observe(written: 70_000_000, hashed: 70_000_000, now: at(1.0)) == 6)
        // 60 MB/s with 6: far below the 105 to hold, so 12 it is.
        #expect(ramp.observe(written: 85_000_000, hashed: 85_000_000, now: at(1.25)) == 12)
        #expect(ramp.phase == .settled)
        #expect(ramp.observe(written: 200_000_000, hashed: 200_000_000, now: at(2)) == 12)
    }

    /// A shared bottleneck (a fast local link, a busy CPU): doubling gains nothing, halving loses
    /// nothing, so it trims down to one connection.
    @Test func trimsWhileFewerConnectionsDoAsWell() {
        var ramp = ConnectionRamp(automaticUpTo: 16, work: 100, step: .milliseconds(100))
        _ = ramp.observe(written: 0, hashed: 0, now: at(0))
        // 1.5 GB/s with 6 at the start (empty buffers), then 880 MB/s with 12: no gain.
        #expect(ramp.observe(written: 150_000_000, hashed: 150_000_000, now: at(0.1)) == 12)
        #expect(ramp.observe(written: 238_000_000, hashed: 238_000_000, now: at(0.2)) == 3)
        #expect(ramp.phase == .trimming)
        #expect(ramp.observe(written: 300_000_000, hashed: 300_000_000, now: at(0.3)) == 3)  // settling
        // 890 MB/s with 3: holds
        #expect(ramp.observe(written: 389_000_000, hashed: 389_000_000, now: at(0.4)) == 1)
        #expect(ramp.observe(written: 450_000_000, hashed: 450_000_000, now: at(0.5)) == 1)  // settling
        // 850 MB/s with 1: holds
        #expect(ramp.observe(written: 535_000_000, hashed: 535_000_000, now: at(0.6)) == 1)
        #expect(ramp.phase == .settled)
    }

    @Test func trimmingStopsAtTheFirstHalvingThatLoses() {
        var ramp = ConnectionRamp(automaticUpTo: 16, work: 100, step: .milliseconds(100))
        _ = ramp.observe(written: 0, hashed: 0, now: at(0))
        #expect(ramp.observe(written: 10_000_000, hashed: 10_000_000, now: at(0.1)) == 12)  // 100 MB/s with 6
        #expect(ramp.observe(written: 20_500_000, hashed: 20_500_000, now: at(0.2)) == 3)  // 105 MB/s with 12
        #expect(ramp.observe(written: 30_000_000, hashed: 30_000_000, now: at(0.3)) == 3)  // settling
        // 100 MB/s with 3: holds
        #expect(ramp.observe(written: 40_000_000, hashed: 40_000_000, now: at(0.4)) == 1)
        #expect(ramp.observe(written: 45_000_000, hashed: 45_000_000, now: at(0.5)) == 1)  // settling
        // 50 MB/s with 1: back to 3
        #expect(ramp.observe(written: 50_000_000, hashed: 50_000_000, now: at(0.6)) == 3)
        #expect(ramp.phase == .settled)
    }

    @Test func theStepFollowsTheRoundTrip() {
        #expect(ConnectionRamp.step(forRoundTrip: .microseconds(200)) == ConnectionRamp.shortestStep)
        #expect(ConnectionRamp.step(forRoundTrip: .milliseconds(40)) == .milliseconds(160))
        #expect(ConnectionRamp.step(forRoundTrip: .seconds(1)) == ConnectionRamp.longestStep)
        var ramp = ConnectionRamp(automaticUpTo: 16, work: 100, step: .milliseconds(160))
        _ = ramp.observe(written: 0, hashed: 0, now: at(0))
        // The first step, only a reference, lasts half a step; later ones a whole step.
        #expect(ramp.observe(written: 10_000_000, hashed: 10_000_000, now: at(0.07)) == 6)
        #expect(ramp.observe(written: 10_000_000, hashed: 10_000_000, now: at(0.08)) == 12)
        #expect(ramp.observe(written: 50_000_000, hashed: 50_000_000, now: at(0.23)) == 12)
        #expect(ramp.observe(written: 50_000_000, hashed: 50_000_000, now: at(0.24)) == 16)
    }

    @Test func neverExceedsTheMaximumOrTheWork() {
        var ramp = ConnectionRamp(automaticUpTo: 8, work: 100)
        _ = ramp.observe(written: 0, hashed: 0, now: at(0))
        var bytes: Int64 = 0
        for step in 1...10 {
            bytes += Int64(step) * 10_000_000
            _ = ramp.observe(written: bytes, hashed: bytes, now: at(0.25 * Double(step)))
        }
        #expect(ramp.target == 8)
        #expect(ConnectionRamp(automaticUpTo: 16, work: 2).target == 2)
    }

    @Test func refusalSettlesAtTheWorkingConnections() {
        var ramp = ConnectionRamp(automaticUpTo: 16, work: 100)
        ramp.refused(working: 3)
        #expect(ramp.target == 3)
        #expect(ramp.phase == .settled)
    }

    /// While the hash lags far behind, bytes count once they are also hashed: a burst of writes the
    /// hash has not caught up with is no gain.
    @Test func aFarBehindHashIsTheThroughput() {
        var ramp = ConnectionRamp(automaticUpTo: 16, work: 100, step: .milliseconds(100))
        _ = ramp.observe(written: 0, hashed: 0, now: at(0))
        // 1 GB/s
        #expect(ramp.observe(written: 50_000_000, hashed: 50_000_000, now: at(0.05)) == 12)
        // 12 connections write 1.5 GB/s, but the hash reads only 1 GB/s, 50 MB behind: no gain, trim.
        #expect(ramp.observe(written: 200_000_000, hashed: 150_000_000, now: at(0.15)) == 3)
        #expect(ramp.phase == .trimming)
    }

    /// Bytes the hash could read pile up (the CPU is the limit): even a doubling that looks like a
    /// gain, or the maximum, turns into trimming.
    @Test func aHashThatFallsBehindTrims() {
        var ramp = ConnectionRamp(automaticUpTo: 16, work: 100, step: .milliseconds(100))
        _ = ramp.observe(written: 0, hashed: 0, frontier: 0, now: at(0))
        #expect(
            ramp.observe(written: 20_000_000, hashed: 20_000_000, frontier: 20_000_000, now: at(0.05)) == 12)
        // +100%, but 40 MB are ready and unhashed: back to 6, and try 3.
        #expect(
            ramp.observe(written: 140_000_000, hashed: 60_000_000, frontier: 100_000_000, now: at(0.15)) == 3)
        #expect(ramp.phase == .trimming)

        var full = ConnectionRamp(automaticUpTo: 12, work: 100, step: .milliseconds(100))
        _ = full.observe(written: 0, hashed: 0, frontier: 0, now: at(0))
        #expect(
            full.observe(written: 20_000_000, hashed: 20_000_000, frontier: 20_000_000, now: at(0.05)) == 12)
        // At the maximum, a hash keeping up settles it there.
        #expect(
            full.observe(written: 80_000_000, hashed: 75_000_000, frontier: 78_000_000, now: at(0.15)) == 12)
        #expect(full.phase == .settled)
    }

    /// A hash a few pieces behind moves in jumps: the bytes written are the throughput.
    @Test func aHashJustBehindDoesNotCount() {
        var ramp = ConnectionRamp(automaticUpTo: 16, work: 100, step: .milliseconds(100))
        _ = ramp.observe(written: 0, hashed: 0, now: at(0))
        #expect(ramp.observe(written: 150_000, hashed: 0, now: at(0.05)) == 12)  // 3 MB/s
        // 6 MB/s written; the hash, waiting for a piece to complete, read nothing: still a gain.
        #expect(ramp.observe(written: 750_000, hashed: 0, now: at(0.15)) == 16)
    }

    @Test func measurementsShorterThanAStepAreIgnored() {
        var ramp = ConnectionRamp(automaticUpTo: 16, work: 100)
        _ = ramp.observe(written: 0, hashed: 0, now: at(0))
        #expect(
            ramp.observe(written: 100_000_000, hashed: 100_000_000, now: at(0.1))
                == ConnectionRamp.initialAuto)
    }

}

extension Int {
    var int64: Int64 { Int64(self) }
}
