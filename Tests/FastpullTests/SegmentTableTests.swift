import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP

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

    /// While the count ramps, the work is shared out for four times the connections running (the next
    /// step's), up to the most it may open; once the count holds, for the connections there are. A
    /// fast first connection of a ramp from four then joins a sixteenth of the file into its first
    /// request, not the quarter the newcomers would have to steal back from it.
    @Test func whileTheCountRampsTheWorkIsSharedForTheNextStep() throws {
        var settings = SegmentTable.Settings()
        settings.expectedConnections = 64
        let ramping = ConnectionController(automaticUpTo: 64)
        #expect(ramping.phase == .ramping && ramping.target == 4)
        let tuned = SegmentTable.tuned(settings, to: ramping)
        #expect(tuned.expectedConnections == 16)
        #expect(
            SegmentTable.tuned(settings, to: ConnectionController(automaticUpTo: 8)).expectedConnections == 8)
        #expect(SegmentTable.tuned(settings, to: ConnectionController(fixed: 4)).expectedConnections == 4)

        // A connection known to carry 100 MB/s asks for a second of it where nothing holds it back.
        settings.priorRate = 100e6
        let plan = Planner.plan(size: 256 << 20, connections: 64, minimumSegmentSize: 1 << 20)
        func firstWindow(_ controller: ConnectionController) -> Int64 {
            var table = SegmentTable(
                segments: plan.segments, settings: SegmentTable.tuned(settings, to: controller))
            return table.nextWindow(for: 0, now: .now).map { $0.0.range.count }.map(Int64.init) ?? 0
        }
        // Ramping from four: a sixteenth of the file at most. Four held: a quarter (64 MiB).
        #expect(firstWindow(ramping) == 16 << 20)
        #expect(firstWindow(ConnectionController(fixed: 4)) == 64 << 20)
    }

    /// On a limit the connections share, windows are a tenth of a second of a connection's speed (at
    /// least 256 KiB; the other connections hide each request's fixed cost), not a second of it: what
    /// the server has queued for a connection is bounded by what its window has left.
    @Test func onASharedLimitWindowsAreSmall() throws {
        var state = table([64 * mebibyte])
        _ = state.nextWindow(for: 0, now: at(0))
        write(&state, 0, 4 * mebibyte, at: 0.5)  // 8 MiB/s measured
        state.settings.sharedLimit = true
        let first = state.nextWindow(for: 0, now: at(0.5))
        let shared = try #require(first)
        #expect(shared.0.range.count == Int(8 * mebibyte / 10))
        // A slow connection's window stays at the smallest, 256 KiB.
        write(&state, 0, Int64(shared.0.range.count), at: 2.5)
        let second = state.nextWindow(for: 0, now: at(2.5))
        let slow = try #require(second)
        #expect(slow.0.range.count == 256 << 10)
        // Not shared: a second of its speed.
        state.settings.sharedLimit = false
        write(&state, 0, Int64(slow.0.range.count), at: 2.6)
        let third = state.nextWindow(for: 0, now: at(2.6))
        let alone = try #require(third)
        #expect(alone.0.range.count >= Int(mebibyte))
    }

    /// Before any connection of this run is measured, windows follow what a connection carried in the
    /// run before (``SegmentTable/Settings/priorRate``): on a shared limit a tenth of a second of it
    /// from the first request, not the 1 MiB of a connection nothing is known about.
    @Test func aRememberedRateSizesTheFirstWindows() {
        var state = table([64 * mebibyte])
        state.settings.sharedLimit = true
        state.settings.priorRate = Double(6 * mebibyte)
        let first = state.nextWindow(for: 0, now: at(0))
        #expect(first?.0.range.count == Int(6 * mebibyte / 10))
        var fresh = table([64 * mebibyte])
        fresh.settings.sharedLimit = true
        let unknown = fresh.nextWindow(for: 0, now: at(0))
        #expect(unknown?.0.range.count == Int(mebibyte))
    }

    /// Near the end a slow connection's window holds no more than the download as a whole still
    /// needs at every connection's speed together (a slow mirror would otherwise keep the last
    /// megabyte for a second after the others are done): 1 MiB left at 1 + 8 MiB/s is about a ninth of
    /// a second, so the slow connection's next window is about a ninth of its speed, not 1 MiB.
    @Test func nearTheEndASlowConnectionsWindowIsShort() throws {
        var state = table([2 * mebibyte, 2 * mebibyte])
        _ = state.nextWindow(for: 0, now: at(0))
        _ = state.nextWindow(for: 1, now: at(0))
        write(&state, 0, 2 * mebibyte, at: 0.25)  // 8 MiB/s, its piece done
        for step in 1...4 { write(&state, 1, mebibyte / 4, at: 0.25 * Double(step)) }  // 1 MiB/s
        let assigned = state.nextWindow(for: 1, now: at(1.0))
        let (window, how) = try #require(assigned)
        #expect(how == .continued)
        #expect(window.range.lowerBound == 3 * mebibyte)
        #expect(window.range.count < Int(mebibyte / 4), "\(window.range.count)")
        #expect(window.range.count >= Int(state.settings.minimumHedge))
        checkTiling(state, size: 4 * mebibyte)
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

    /// A steal leaves the owner its window when the owner will soon be through it…
    @Test func aStealLeavesAFastOwnerItsWindow() throws {
        var state = table(
            [3 * mebibyte, mebibyte], settings: .init(minimumSplit: mebibyte / 4, initialWindow: 2 * mebibyte)
        )
        _ = state.nextWindow(for: 0, now: at(0))  // window [0, 2 MiB)
        _ = state.nextWindow(for: 1, now: at(0))
        write(&state, 0, mebibyte / 2, at: 0.25)  // 2 MiB/s: the rest of its window in 0.75 s
        write(&state, 1, mebibyte, at: 0.25)
        state.settings.stealCutSeconds = 1
        let assigned = state.nextWindow(for: 1, now: at(0.25))
        let (_, how) = try #require(assigned)
        #expect(how == .stolen(from: 0, at: 2 * mebibyte))
    }

    /// …and cuts into it when the owner would take long for the rest (a slow connection holding a
    /// large window is the tail everyone else would wait for): the owner stops at the cut.
    @Test func aStealCutsASlowOwnersWindow() throws {
        var state = table(
            [3 * mebibyte, mebibyte], settings: .init(minimumSplit: mebibyte / 4, initialWindow: 2 * mebibyte)
        )
        _ = state.nextWindow(for: 0, now: at(0))  // window [0, 2 MiB)
        _ = state.nextWindow(for: 1, now: at(0))
        write(&state, 0, 100_000, at: 0.25)  // 0.4 MB/s: seconds for the rest of its window
        write(&state, 1, mebibyte, at: 0.25)
        let assigned = state.nextWindow(for: 1, now: at(0.25))
        let (window, how) = try #require(assigned)
        // Its piece is the one the hash waits for, so this may be a hedge (it keeps a little more than
        // it claimed) rather than a steal at the middle; either way its window is cut.
        let victim: Int
        let at: Int64
        switch how {
        case .stolen(let from, let offset), .hedged(let from, let offset): (victim, at) = (from, offset)
        default:
            Issue.record("expected a steal or a hedge, got \(how)")
            return
        }
        #expect(victim == 0)
        #expect(at < 2 * mebibyte && at > 100_000)
        #expect(window.range.lowerBound == at)
        // The owner may claim only up to the cut.
        #expect(write(&state, 0, 2 * mebibyte, at: 0.5) == at - 100_000)
        checkTiling(state, size: 4 * mebibyte)
    }

    /// The probe's answer to `Range: bytes=0-` runs through the whole file: its connection, adopted on
    /// the first piece, goes on into every piece nobody has started on.
    @Test func theProbesAnswerRunsOnThroughUntouchedPieces() throws {
        var state = table([mebibyte, mebibyte, mebibyte, mebibyte])
        let adoption = state.adopt(0, end: 4 * mebibyte, requestCost: .milliseconds(100), now: at(0))
        let adopted = try #require(adoption)
        #expect(adopted.range == 0..<4 * mebibyte)
        #expect(write(&state, 0, 3 * mebibyte + 5, at: 0.1) == 3 * mebibyte + 5)
        #expect(write(&state, 0, mebibyte, at: 0.2) == mebibyte - 5)
        #expect(state.isComplete)
        checkTiling(state, size: 4 * mebibyte)
        // Once the first piece is someone's, it is not adopted again.
        var other = table([mebibyte, mebibyte])
        _ = other.nextWindow(for: 1, now: at(0))
        let again = other.adopt(0, end: 2 * mebibyte, requestCost: .zero, now: at(0))
        #expect(again == nil)
    }

    /// The answer reaches the end of its piece exactly (the piece is complete) and goes on into the
    /// next: the contiguous prefix stays at the last byte written, and it moves with every commit.
    @Test func thePrefixStaysInAPieceThatGrowsAfterItWasComplete() throws {
        var state = table([mebibyte, mebibyte, mebibyte])
        let adopted = state.adopt(0, end: 3 * mebibyte, requestCost: .zero, now: at(0))
        #expect(adopted != nil)
        #expect(write(&state, 0, mebibyte, at: 0.1) == mebibyte)
        #expect(state.frontier == mebibyte)
        let allowed = state.claim(0, count: mebibyte / 2)
        #expect(allowed == mebibyte / 2)
        #expect(state.frontier == mebibyte)
        let moved = state.commit(0, count: allowed, now: at(0.2))
        #expect(moved)
        #expect(state.frontier == mebibyte + mebibyte / 2)
        #expect(!state.isComplete)
        #expect(write(&state, 0, 2 * mebibyte, at: 0.3) == mebibyte + mebibyte / 2)
        #expect(state.isComplete && state.frontier == 3 * mebibyte)
    }

    /// A connection still waiting for its answer loses its piece to the probe's answer arriving there
    /// (a server answering one request at a time keeps it waiting behind that very answer): it may
    /// claim nothing when its answer comes. One that has its answer keeps its piece, and the probe's
    /// answer stops at it.
    @Test func theProbesAnswerTakesOverPiecesWhoseOwnersStillWait() throws {
        var state = table([mebibyte, mebibyte, mebibyte, mebibyte])
        let adopted = state.adopt(0, end: 4 * mebibyte, requestCost: .milliseconds(100), now: at(0))
        #expect(adopted != nil)
        let waiting = state.nextWindow(for: 1, now: at(0))
        #expect(waiting?.0.range.lowerBound == mebibyte)
        let answered = state.nextWindow(for: 2, now: at(0))
        #expect(answered?.0.range.lowerBound == 2 * mebibyte)
        state.recordFirstByte(2, after: .milliseconds(100))
        // Worker 0 reads on through piece 1 (worker 1 still waits) and stops where worker 2's is.
        #expect(write(&state, 0, 3 * mebibyte, at: 0.1) == 2 * mebibyte)
        #expect(state.claim(1, count: 1000) == 0)
        #expect(state.piece(of: 1) == nil)
        #expect(write(&state, 2, mebibyte, at: 0.2) == mebibyte)
        checkTiling(state, size: 4 * mebibyte)
    }

    /// An owner whose speed is not measured yet is not cut: the probe's answer to the whole file may
    /// well be done before another connection could start. Measured and far too slow, it is cut.
    @Test func anUnmeasuredOpeningAnswerIsNotCut() throws {
        var state = table([16 * mebibyte])
        let adopted = state.adopt(0, end: 16 * mebibyte, requestCost: .milliseconds(100), now: at(0))
        #expect(adopted != nil)
        #expect(state.nextWindow(for: 1, now: at(0)) == nil)
        write(&state, 0, 100_000, at: 0.3)  // about 0.33 MB/s: 50 s for the rest
        let assigned = state.nextWindow(for: 1, now: at(0.3))
        let (window, how) = try #require(assigned)
        guard case .stolen(from: 0, let offset) = how else {
            Issue.record("expected a steal from worker 0, got \(how)")
            return
        }
        #expect(window.range.lowerBound == offset && offset > 100_000 && offset < 16 * mebibyte)
        #expect(write(&state, 0, 16 * mebibyte, at: 0.4) == offset - 100_000)
        checkTiling(state, size: 16 * mebibyte)
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
        // The slow owner keeps a sixteenth of a second of its speed past what it claimed: its piece is
        // the one the hash waits for (a tail elsewhere keeps a quarter of a second).
        #expect(cut == 100_000 + 6_250)
        #expect(window.range.lowerBound == cut)
        #expect(state.piece(of: 0)?.end == cut)
        checkTiling(state, size: 4 * mebibyte)
    }

    /// A connection that slows down in the middle of its window (a server's bucket ran dry) shows it
    /// in what the window brought before a sample of its speed does: its tail is taken over by what
    /// it brought since the window's first bytes, not by the speed it had. Judged by that speed
    /// (4 MiB/s, as fast as the other), nothing would be taken.
    @Test func aConnectionThatSlowsInItsWindowIsJudgedByWhatTheWindowBrought() throws {
        var state = table(
            [4 * mebibyte, 2 * mebibyte],
            settings: .init(
                minimumSplit: 8 * mebibyte, initialWindow: 4 * mebibyte, endgameMinimumHalf: 8 * mebibyte))
        _ = state.nextWindow(for: 0, now: at(0))
        _ = state.nextWindow(for: 1, now: at(0))
        write(&state, 0, mebibyte, at: 0.25)  // 4 MiB/s, sampled
        write(&state, 1, mebibyte, at: 0.25)
        write(&state, 0, 32 << 10, at: 0.45)  // 160 KiB/s since, no sample yet
        write(&state, 1, mebibyte, at: 0.45)  // done
        #expect(state.connections[0]?.rate == 4 * Double(mebibyte))
        let next = state.nextWindow(for: 1, now: at(0.45))
        guard case .hedged(let victim, let cut)? = next?.1 else {
            Issue.record("expected a hedge, got \(String(describing: next))")
            return
        }
        #expect(victim == 0)
        #expect(cut > mebibyte + (32 << 10) && cut < mebibyte + (96 << 10))
        #expect(state.piece(of: 0)?.end == cut)
        checkTiling(state, size: 6 * mebibyte)
        // Nothing more for a while (four socket buffers' worth of its speed, at least the settling
        // time): the window is timed to now, and its tail is taken over.
        var silent = table(
            [4 * mebibyte, 2 * mebibyte],
            settings: .init(
                minimumSplit: 8 * mebibyte, initialWindow: 4 * mebibyte, endgameMinimumHalf: 8 * mebibyte))
        _ = silent.nextWindow(for: 0, now: at(0))
        _ = silent.nextWindow(for: 1, now: at(0))
        // Bytes come 64 KiB at a time: a pipe's worth is 1 MiB, as from the other connection.
        var steps = silent
        for step in 1...16 { write(&silent, 0, 64 << 10, at: 0.25 * Double(step) / 16) }
        write(&steps, 0, mebibyte, at: 0.25)
        func finishTheOther(_ state: inout SegmentTable) {
            write(&state, 1, mebibyte, at: 0.25)
            write(&state, 1, mebibyte, at: 0.3)
            #expect(state.nextWindow(for: 1, now: at(0.3)) == nil)
        }
        finishTheOther(&silent)
        finishTheOther(&steps)
        let late = silent.nextWindow(for: 2, now: at(0.4))
        guard case .hedged(0, _)? = late?.1 else {
            Issue.record("expected a hedge of a silent window, got \(String(describing: late))")
            return
        }
        // Bytes that come a mebibyte at a time are not silent for the same 0.15 s.
        #expect(steps.nextWindow(for: 2, now: at(0.4)) == nil)
        // A window that has run for less than the settling time is judged by the speed sampled.
        var early = table(
            [4 * mebibyte, 2 * mebibyte],
            settings: .init(
                minimumSplit: 8 * mebibyte, initialWindow: 4 * mebibyte, endgameMinimumHalf: 8 * mebibyte))
        _ = early.nextWindow(for: 0, now: at(0))
        _ = early.nextWindow(for: 1, now: at(0))
        write(&early, 0, mebibyte, at: 0.25)
        write(&early, 1, mebibyte, at: 0.25)
        write(&early, 0, 4 << 10, at: 0.3)
        write(&early, 1, mebibyte, at: 0.3)
        #expect(early.nextWindow(for: 1, now: at(0.3)) == nil)
    }

    /// Work for as many connections as there are waiting ranges and ranges worth stealing from.
    @Test func openingsCountTheRangesOthersCouldTake() {
        var state = table([mebibyte, mebibyte, mebibyte, 8 * mebibyte])
        #expect(state.openings(now: at(0)) == 4)
        _ = state.nextWindow(for: 0, now: at(0))
        _ = state.nextWindow(for: 1, now: at(0))
        // Two 1 MiB pieces taken whole; the 8 MiB one waits.
        #expect(state.openings(now: at(0)) == 2)
        _ = state.nextWindow(for: 2, now: at(0))
        _ = state.nextWindow(for: 3, now: at(0))
        // Nothing waits; the 8 MiB piece's owner asked for 1 MiB of it, and the 4 MiB above its
        // middle are worth a steal, and one from that thief in turn.
        #expect(state.openings(now: at(0)) == 2)
        #expect(state.hasWorkForAnotherConnection(now: at(0)))
    }

    @Test func noHedgeWhenTheOwnerIsNotMuchSlower() throws {
        var state = table(
            [2 * mebibyte, 2 * mebibyte],
            settings: .init(
                minimumSplit: 4 * mebibyte, initialWindow: mebibyte, endgameMinimumHalf: 4 * mebibyte)
        )
        _ = state.nextWindow(for: 0, now: at(0))
        _ = state.nextWindow(for: 1, now: at(0))
        write(&state, 0, mebibyte, at: 0.4)  // 2.5 MiB/s
        write(&state, 1, mebibyte, at: 0.3)
        write(&state, 1, mebibyte, at: 0.5)  // 4 MiB/s, done
        #expect(state.nextWindow(for: 1, now: at(0.5)) == nil)
    }

    /// A connection with nothing else left takes the tail of one twice as slow (it would end
    /// otherwise), leaving the owner a sixteenth of a second of its bytes: the download ends with its
    /// faster connection. With other work waiting, it would not (the owner is not 2× slower than the
    /// thief with a quarter second of grace).
    @Test func theLastTailOfAConnectionTwiceAsSlowIsTaken() throws {
        var state = table(
            [2 * mebibyte, 2 * mebibyte],
            settings: .init(
                minimumSplit: 4 * mebibyte, initialWindow: mebibyte, endgameMinimumHalf: 4 * mebibyte)
        )
        _ = state.nextWindow(for: 0, now: at(0))
        _ = state.nextWindow(for: 1, now: at(0))
        write(&state, 0, mebibyte, at: 0.5)  // 2 MiB/s
        write(&state, 1, mebibyte, at: 0.3)
        write(&state, 1, mebibyte, at: 0.5)  // 4 MiB/s, done
        let next = state.nextWindow(for: 1, now: at(0.5))
        guard case .hedged(let victim, let cut)? = next?.1 else {
            Issue.record("expected a hedge, got \(String(describing: next))")
            return
        }
        #expect(victim == 0)
        #expect(cut == mebibyte + Int64((2.0 * Double(mebibyte) * 0.25 / 4).rounded(.up)))
        #expect(state.piece(of: 0)?.end == cut)
        checkTiling(state, size: 4 * mebibyte)
    }

    /// The fast connections finished and left while the slow one still had its window: a connection
    /// that joins now is judged by the speed of those that left, not by the slow one's (the only one
    /// still measured), so the download opens one and it takes the slow tail over.
    @Test func aNewcomerIsJudgedByTheConnectionsThatLeft() throws {
        var state = table([mebibyte, 2 * mebibyte, 2 * mebibyte])
        for worker in 0...2 { _ = state.nextWindow(for: worker, now: at(0)) }
        // Requests here are answered after 0.2 s.
        for worker in 1...2 { state.recordFirstByte(worker, after: .milliseconds(200)) }
        for step in 1...2 {
            for worker in 1...2 { write(&state, worker, mebibyte, at: 0.25 * Double(step)) }  // 4 MiB/s
        }
        for worker in 1...2 {
            // The slow one's first bytes have not come yet (its speed is unknown, and it has waited
            // for them no longer than four requests here take): nothing to take.
            #expect(state.nextWindow(for: worker, now: at(0.5)) == nil)
            state.leave(worker)
        }
        write(&state, 0, 50_000, at: 0.5)  // 100 kB/s
        #expect(state.hasWorkForAnotherConnection(now: at(0.5)))
        // One tail: work for one connection, not for as many as could join.
        #expect(state.openings(now: at(0.5)) == 1)
        let assigned = state.nextWindow(for: 3, now: at(0.6))
        guard case .hedged(let victim, let cut)? = assigned?.1 else {
            Issue.record("expected a hedge, got \(String(describing: assigned))")
            return
        }
        #expect(victim == 0)
        #expect(cut < mebibyte / 4)
        #expect(state.piece(of: 0)?.end == cut)
        checkTiling(state, size: 5 * mebibyte)
        // With no connection ever measured but the slow one, a newcomer is no better: nothing to do.
        var alone = table([mebibyte])
        _ = alone.nextWindow(for: 0, now: at(0))
        write(&alone, 0, 50_000, at: 0.5)
        #expect(!alone.hasWorkForAnotherConnection(now: at(0.5)))
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

    /// With several sources, a connection is judged against its own source's connections: those of
    /// a slow mirror are all slow, and replacing one would only reconnect it there. One far slower than
    /// the others of its own source still is replaced.
    @Test func aSlowMirrorsConnectionsAreJudgedAmongThemselves() {
        var state = table(Array(repeating: 64 * mebibyte, count: 8))
        for worker in 0..<8 {
            _ = state.nextWindow(for: worker, now: at(0))
            state.setGroup(worker, worker < 4 ? 0 : 1)
        }
        var replaced: Set<Int> = []
        for step in 1...10 {
            let time = Double(step) * 0.25
            for worker in 0..<4 { write(&state, worker, 2 * mebibyte, at: time) }  // 8 MiB/s, source 0
            for worker in 4..<7 { write(&state, worker, 100_000, at: time) }  // 0.4 MB/s, source 1
            write(&state, 7, 5_000, at: time)  // 20 kB/s, source 1 too
            replaced.formUnion(state.stalledConnections(now: at(time)))
        }
        // Against all eight (typical 8 MiB/s), 4, 5 and 6 would have been replaced as well.
        #expect(replaced == [7])
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
    /// sending when that is soon done at its rate (cutting it would only waste those bytes); the rest
    /// of its range goes to the others.
    @Test func aReleasedConnectionFinishesItsWindowWhenThatIsSoonDone() throws {
        // 2 MB/s over its first measurement: the rest of its window is a quarter of a second away.
        let how = try releasedConnectionFinishesItsWindow(written: 600_000)
        #expect(how == .waiting)
    }

    /// Connection 0 takes its first window of an 8 MiB file, writes `written` bytes by 0.3 s and is
    /// released: the rest of its window is still its own, nothing past it is, and the next connection
    /// starts right after it. Returns how that one was given its window.
    private func releasedConnectionFinishesItsWindow(
        written: Int64, settings: SegmentTable.Settings = .init(initialWindow: 1 << 20)
    ) throws -> SegmentTable.Assignment {
        var state = table([8 * mebibyte], settings: settings)
        let assigned = state.nextWindow(for: 0, now: at(0))
        let (first, _) = try #require(assigned)
        write(&state, 0, written, at: 0.3)
        state.release(0)
        #expect(write(&state, 0, first.range.count.int64, at: 0.4) == first.range.count.int64 - written)
        #expect(state.claim(0, count: 10) == 0)
        let next = state.nextWindow(for: 1, now: at(0.4))
        let (window, how) = try #require(next)
        #expect(window.range.lowerBound == first.range.upperBound)
        checkTiling(state, size: 8 * mebibyte)
        return how
    }

    /// One that would take seconds to finish its window (a sliver of a shared limit) keeps only what
    /// comes in the next quarter of a second; the rest of the window goes to the others at once.
    @Test func aSlowReleasedConnectionKeepsAQuarterOfASecond() throws {
        var state = table([8 * mebibyte])
        let assigned = state.nextWindow(for: 0, now: at(0))
        let (first, _) = try #require(assigned)
        // 100 kB/s over its first measurement: the rest of its window is ten seconds away.
        write(&state, 0, 30_000, at: 0.3)
        state.release(0)
        #expect(write(&state, 0, first.range.count.int64, at: 0.4) == 25_000)
        let next = state.nextWindow(for: 1, now: at(0.4))
        let (window, _) = try #require(next)
        #expect(window.range.lowerBound == 55_000)
        checkTiling(state, size: 8 * mebibyte)
    }

    /// Where the limit is shared, the same slow connection finishes its window: the others carry the
    /// same total without it, and a cut would throw away what the server has sent ahead into the
    /// buffers (on `--limit-rate`, 6 MiB more sent than the 64 MiB file, before).
    @Test func onASharedLimitAReleasedConnectionFinishesItsWindow() throws {
        var settings = SegmentTable.Settings(initialWindow: 1 << 20)
        settings.sharedLimit = true
        // 100 kB/s: the rest of its window is ten seconds away.
        _ = try releasedConnectionFinishesItsWindow(written: 30_000, settings: settings)
    }

    /// Not the opening answer, though, which asked for the whole file: kept to its end, a slow one
    /// would hold the rest of the download. It keeps a quarter of a second, as anywhere.
    @Test func onASharedLimitAReleasedOpeningAnswerIsNotKeptToTheEnd() throws {
        var settings = SegmentTable.Settings(initialWindow: 1 << 20)
        settings.sharedLimit = true
        var state = table(
            [mebibyte, mebibyte, mebibyte, mebibyte, mebibyte, mebibyte, mebibyte, mebibyte],
            settings: settings)
        let adoption = state.adopt(0, end: 8 * mebibyte, requestCost: .zero, now: at(0))
        #expect(adoption != nil)
        write(&state, 0, 30_000, at: 0.3)
        state.release(0)
        #expect(write(&state, 0, 8 * mebibyte, at: 0.4) == 25_000)
        checkTiling(state, size: 8 * mebibyte)
    }

    /// Before its first byte, its rate unknown: it keeps nothing of a window larger than a drain, and
    /// the next connection starts where it would have.
    @Test func aReleasedConnectionNotYetMeasuredGivesItsWindowBack() throws {
        var state = table([8 * mebibyte])
        let assigned = state.nextWindow(for: 0, now: at(0))
        let (first, _) = try #require(assigned)
        state.release(0)
        let next = state.nextWindow(for: 1, now: at(0.1))
        let (window, _) = try #require(next)
        #expect(window.range.lowerBound == first.range.lowerBound)
        #expect(state.claim(0, count: 10) == 0)
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
        #expect(!state.hasWorkForAnotherConnection(now: at(0)))
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

    /// Under a horizon a window is at most its connection's share of the unclaimed bytes within it,
    /// shared with the connections fetching: the first to wake when the horizon moves took all of
    /// it, and the others cut it at once.
    @Test func underAHorizonAWindowIsItsShareOfTheWorkWithinIt() throws {
        func second(horizon: Int64?) throws -> SegmentTable.Window {
            var settings = SegmentTable.Settings(initialWindow: 32 * mebibyte)
            settings.maximumMergedPiece = 2 * mebibyte
            var state = table([2 * mebibyte, 30 * mebibyte], settings: settings)
            state.horizon = horizon
            _ = state.nextWindow(for: 0, now: at(0))
            let assigned = state.nextWindow(for: 1, now: at(0))
            let (window, how) = try #require(assigned)
            #expect(how == .waiting)
            checkTiling(state, size: 32 * mebibyte)
            return window
        }
        // Two fetching, 32 MiB unclaimed within the horizon: half each.
        let shared = try second(horizon: 32 * mebibyte)
        #expect(shared.range == (2 * mebibyte)..<(18 * mebibyte))
        // Without a horizon, a window as its speed asks (here the whole piece).
        let unshared = try second(horizon: nil)
        #expect(unshared.range == (2 * mebibyte)..<(32 * mebibyte))
    }

    /// Time a connection spends waiting for the horizon is no part of its speed: 1 MiB in 0.25 s,
    /// four seconds of waiting, 1 MiB in 0.25 s is 4 MiB/s, not under 0.5 (such a connection looked
    /// far slower than its peers, and its next windows were taken over at once).
    @Test func waitingForTheHorizonIsNoPartOfAConnectionsSpeed() throws {
        var state = table([4 * mebibyte, 4 * mebibyte], settings: .init(rateSample: .milliseconds(200)))
        _ = state.nextWindow(for: 0, now: at(0))
        write(&state, 0, mebibyte, at: 0.25)
        state.waitsForHorizon(0, now: at(0.25))
        _ = state.nextWindow(for: 0, now: at(4.25))
        write(&state, 0, mebibyte, at: 4.5)
        let rate = try #require(state.connections[0]?.rate)
        #expect(rate > 3.5 * Double(mebibyte), "\(rate)")
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

    /// In the endgame a connection with nothing left halves the range that needs longest, even from an
    /// owner as fast as itself (no hedge pays then) and below two minimum splits (no steal then): the
    /// last ranges are not carried by one connection each while the others end. Down to halves that
    /// save 25 ms; on a shared limit, 50 ms and halves of 256 KiB (halving brings nothing sooner there).
    @Test func inTheEndgameAnEquallyFastOwnersRestIsHalved() {
        // The owner writes its first MiB in 0.25 s (4 MiB/s) and has `left` to go; connection 1 is done.
        func endgame(left: Int64, shared: Bool = false) -> (SegmentTable.Window, SegmentTable.Assignment)? {
            var settings = SegmentTable.Settings(initialWindow: 2 * mebibyte)
            settings.sharedLimit = shared
            var state = table([mebibyte + left, mebibyte], settings: settings)
            _ = state.nextWindow(for: 0, now: at(0))
            _ = state.nextWindow(for: 1, now: at(0))
            write(&state, 0, mebibyte, at: 0.25)
            write(&state, 1, mebibyte, at: 0.25)
            let next = state.nextWindow(for: 1, now: at(0.25))
            checkTiling(state, size: 2 * mebibyte + left)
            return next
        }
        // 1 MiB left at 4 MiB/s: each takes half.
        let next = endgame(left: mebibyte)
        #expect(next?.1 == .stolen(from: 0, at: mebibyte + mebibyte / 2))
        #expect(next?.0.range == (mebibyte + mebibyte / 2)..<(2 * mebibyte))
        // 256 KiB left (62 ms): halving saves 31 ms.
        let small = endgame(left: 256 << 10)
        #expect(small?.1 == .stolen(from: 0, at: mebibyte + 128 << 10))
        // 160 KiB left (39 ms): halving would save 20 ms, not worth a request.
        #expect(endgame(left: 160 << 10) == nil)
        // On a shared limit: 1 MiB is halved, 256 KiB is not.
        #expect(endgame(left: mebibyte, shared: true)?.1 == .stolen(from: 0, at: mebibyte + mebibyte / 2))
        #expect(endgame(left: 256 << 10, shared: true) == nil)
    }

    /// With work held back by the horizon (an output that takes bytes in order), a connection with
    /// nothing to do within it is not in the endgame: it waits rather than halve the rest of an owner
    /// as fast as itself, which only cuts that owner (and the reader takes nothing sooner). An owner of
    /// the piece the reader waits for that is far slower is still taken over.
    @Test func beforeTheHorizonMovesNothingIsTakenFromAnOwnerAsFast() {
        // The owner writes its first MiB of the first piece in `ownerSeconds`; connection 1 is done
        // with the second; with `held`, a third lies past the horizon (the state within it is the
        // same: that is the endgame without it).
        func idle(ownerSeconds: Double, held: Bool) -> (SegmentTable.Window, SegmentTable.Assignment)? {
            let sizes = [2 * mebibyte, mebibyte] + (held ? [mebibyte] : [])
            var state = table(sizes, settings: SegmentTable.Settings(initialWindow: 2 * mebibyte))
            if held { state.horizon = 3 * mebibyte }
            _ = state.nextWindow(for: 0, now: at(0))
            _ = state.nextWindow(for: 1, now: at(0))
            write(&state, 1, mebibyte, at: 0.25)
            write(&state, 0, mebibyte / 16, at: ownerSeconds / 16)
            write(&state, 0, mebibyte - mebibyte / 16, at: ownerSeconds)
            #expect(state.isHeldByHorizon == held)
            let next = state.nextWindow(for: 1, now: at(max(ownerSeconds, 0.25)))
            checkTiling(state, size: sizes.reduce(0, +))
            return next
        }
        // As fast (4 MiB/s each): halved in the endgame, left alone while the horizon holds work.
        #expect(idle(ownerSeconds: 0.25, held: false)?.1 == .stolen(from: 0, at: mebibyte + mebibyte / 2))
        #expect(idle(ownerSeconds: 0.25, held: true) == nil)
        // Far slower (1 MiB in 4 s): the piece the reader waits for is taken over all the same.
        let slow = idle(ownerSeconds: 4, held: true)
        if case .hedged(from: 0, _)? = slow?.1 {
        } else {
            Issue.record("expected a hedge of the frontier's owner, got \(String(describing: slow))")
        }
    }

    /// Connection 0 owns a piece of `length` bytes and writes `writes` steps of `count`, one every
    /// `every` seconds; connection 1 fetched its own MiB in 0.25 s and has nothing left.
    func ownerBesideAFinishedPeer(owning length: Int64, writes: Int, of count: Int64, every: Double)
        -> SegmentTable
    {
        var state = table([length, mebibyte])
        _ = state.nextWindow(for: 0, now: at(0))
        _ = state.nextWindow(for: 1, now: at(0))
        write(&state, 1, mebibyte, at: 0.25)
        for step in 1...writes { write(&state, 0, count, at: every * Double(step)) }
        return state
    }

    /// At the very end a slow owner's tail below the smallest hedge is taken whole by an idle
    /// connection far faster than it: 50 kB at 100 kB/s (0.5 s), or at 0.5 MB/s (0.1 s), against
    /// 4 MiB/s. Otherwise nothing could take it (a hedge leaves at least 64 KiB, an endgame split
    /// halves 128 KiB or more), and the last bytes of a download waited for its slowest connection.
    /// The idle one's wait is its request's cost, not the grace a hedge leaves an owner that keeps
    /// fetching: with that grace the 0.5 MB/s owner kept its tail, and a shaped straggler's last bytes
    /// ended the download 0.16 s after the rest.
    /// A far slower owner's tail smaller still (25 kB at 1 MB/s, due in 25 ms) is taken too: the
    /// usual least gain of a hedge (50 ms) does not apply to a tail this small.
    @Test(arguments: [
        (Int64(200_000), 6, 0.25, 1.5), (Int64(1_000_000), 38, 0.05, 1.9),
        (Int64(1_000_000), 39, 0.025, 0.98),
    ])
    func atTheEndASlowOwnersSmallTailIsTakenWhole(owning: Int64, writes: Int, every: Double, asked: Double)
        throws
    {
        var state = ownerBesideAFinishedPeer(owning: owning, writes: writes, of: 25_000, every: every)
        let assigned = state.nextWindow(for: 1, now: at(asked))
        let next = try #require(assigned)
        let cut = Int64(writes) * 25_000
        #expect(next.1 == .hedged(from: 0, at: cut))
        #expect(next.0.range == cut..<owning)
        checkTiling(state, size: owning + mebibyte)
        // The owner stops where it is: nothing more is its to write.
        #expect(state.claim(0, count: 1000) == 0)
    }

    /// At the end, a connection not measured yet (opened to take over a tail, it landed on a slow
    /// port) is judged by what it brought since it joined: 6 kB in 0.15 s of a 389 kB window. An idle
    /// connection at 4 MiB/s takes the rest over instead of waiting for a rate sample.
    @Test func atTheEndAnUnmeasuredSlowOwnerIsHedged() throws {
        var state = table([mebibyte, 400_000])
        _ = state.nextWindow(for: 1, now: at(0))
        write(&state, 1, mebibyte, at: 0.25)
        let owned = state.nextWindow(for: 0, now: at(0.3))
        #expect(owned?.0.range == mebibyte..<(mebibyte + 400_000))
        write(&state, 0, 6_000, at: 0.32)
        // Too soon to tell: a tenth of a second has not passed since it joined.
        #expect(state.nextWindow(for: 1, now: at(0.35)) == nil)
        let assigned = state.nextWindow(for: 1, now: at(0.45))
        let next = try #require(assigned)
        guard case .hedged(from: 0, let cut) = next.1 else {
            Issue.record("expected a hedge of connection 0, got \(next.1)")
            return
        }
        #expect(cut > mebibyte + 6_000 && cut < mebibyte + 100_000, "\(cut)")
        #expect(next.0.range == cut..<(mebibyte + 400_000))
        checkTiling(state, size: mebibyte + 400_000)
    }

    /// The same with a tail below the smallest hedge (a 36 kB window that brought 14 kB, then
    /// nothing): it is taken whole.
    @Test func atTheEndAnUnmeasuredSlowOwnersSmallTailIsTakenWhole() throws {
        var state = table([mebibyte, 36_000])
        _ = state.nextWindow(for: 1, now: at(0))
        write(&state, 1, mebibyte, at: 0.25)
        _ = state.nextWindow(for: 0, now: at(0.3))
        write(&state, 0, 14_000, at: 0.32)
        #expect(state.nextWindow(for: 1, now: at(0.35)) == nil)
        let assigned = state.nextWindow(for: 1, now: at(0.45))
        let next = try #require(assigned)
        #expect(next.1 == .hedged(from: 0, at: mebibyte + 14_000))
        #expect(next.0.range == (mebibyte + 14_000)..<(mebibyte + 36_000))
        checkTiling(state, size: mebibyte + 36_000)
        #expect(state.claim(0, count: 1000) == 0)
    }

    /// An owner not measured yet that is about as fast as its peers (in its slow start, or all of a
    /// resumed download's connections just opened) is not judged early: cutting it would throw away
    /// what its socket holds for little.
    @Test func atTheEndAnUnmeasuredOwnerOfAboutItsPeersSpeedKeepsItsWindow() {
        var state = table([mebibyte, 400_000])
        _ = state.nextWindow(for: 1, now: at(0))
        write(&state, 1, mebibyte, at: 0.25)
        _ = state.nextWindow(for: 0, now: at(0.3))
        // 2 MB/s from its first byte, half its peer's 4 MiB/s.
        for step in 0...3 { write(&state, 0, 50_000, at: 0.32 + 0.025 * Double(step)) }
        #expect(state.nextWindow(for: 1, now: at(0.45)) == nil)
        #expect(state.claim(0, count: 50_000) == 50_000)
    }

    /// Connection 1 fetched its MiB in 0.25 s, its requests answered after `cost` seconds; connection
    /// 0 asked for the last 72 kB at 0.3 s (a straggler cut and reconnected), after writing
    /// `earlier` bytes of that piece in an answer before, and no byte of the answer has come since.
    func ownerAwaitingItsAnswer(cost: Double, earlier: Int64 = 0) -> SegmentTable {
        var settings = SegmentTable.Settings(initialWindow: mebibyte)
        if earlier > 0 { settings.initialWindow = earlier }
        var state = table([mebibyte, earlier + 72_000], settings: settings)
        _ = state.nextWindow(for: 1, now: at(0))
        state.recordFirstByte(1, after: .milliseconds(Int64(cost * 1000)))
        write(&state, 1, mebibyte, at: 0.25)
        _ = state.nextWindow(for: 0, now: at(0.3 - (earlier > 0 ? 0.01 : 0)))
        if earlier > 0 {
            write(&state, 0, earlier, at: 0.3)
            #expect(state.nextWindow(for: 0, now: at(0.3))?.1 == .continued)
        }
        return state
    }

    /// At the end, an owner whose request has waited for its answer four times as long as requests
    /// here take (and a tenth of a second at least) is taken over whole by an idle connection, and a
    /// connection opened now would be given it: no byte says how fast the owner is, and on a shaped
    /// link a straggler that reconnected behind a slow queue held the end of the download for 0.28 s
    /// with a 72 kB window while every other connection had finished. The owner stops: it may claim
    /// nothing more.
    @Test(arguments: [Int64(0), 100_000])
    func atTheEndAnOwnerLongWaitingForItsAnswerIsTakenOverWhole(earlier: Int64) throws {
        var state = ownerAwaitingItsAnswer(cost: 0.002, earlier: earlier)
        let size = mebibyte + earlier + 72_000
        // Waiting 0.05 s: nothing to do yet.
        #expect(state.openings(now: at(0.35)) == 0)
        #expect(state.nextWindow(for: 1, now: at(0.35)) == nil)
        #expect(state.openings(now: at(0.42)) == 1)
        let assigned = state.nextWindow(for: 1, now: at(0.42))
        let next = try #require(assigned)
        #expect(next.1 == .hedged(from: 0, at: mebibyte + earlier))
        #expect(next.0.range == (mebibyte + earlier)..<size)
        checkTiling(state, size: size)
        #expect(state.claim(0, count: 1000) == 0)
        #expect(state.claim(1, count: 72_000) == 72_000)
        state.commit(1, count: 72_000, now: at(0.45))
        #expect(state.isComplete)
    }

    /// Where every request waits a tenth of a second for its answer (an object store), an owner that
    /// has waited 0.3 s keeps its window: that is no more than a new request would wait. At 0.45 s it
    /// is overdue.
    @Test func atTheEndAnOwnerWaitingAsLongAsRequestsTakeHereKeepsItsWindow() {
        var state = ownerAwaitingItsAnswer(cost: 0.1)
        #expect(state.nextWindow(for: 1, now: at(0.6)) == nil)
        #expect(state.nextWindow(for: 1, now: at(0.75))?.1 == .hedged(from: 0, at: mebibyte))
    }

    /// With work held back by the horizon, a window whose answer is long overdue is still taken
    /// over: that is evidence, not the endgame's smaller gain (a connection just reset by a stall
    /// and waiting on the piece the reader needs would otherwise hold the pipe for a stall timeout).
    @Test func anOverdueWindowIsTakenOverBeforeTheHorizonMovesToo() {
        var state = table(
            [mebibyte, 72_000, mebibyte], settings: SegmentTable.Settings(initialWindow: mebibyte))
        state.horizon = mebibyte + 72_000
        _ = state.nextWindow(for: 1, now: at(0))
        state.recordFirstByte(1, after: .milliseconds(100))
        write(&state, 1, mebibyte, at: 0.25)
        _ = state.nextWindow(for: 0, now: at(0.3))
        #expect(state.isHeldByHorizon)
        #expect(state.nextWindow(for: 1, now: at(0.6)) == nil)
        #expect(state.nextWindow(for: 1, now: at(0.75))?.1 == .hedged(from: 0, at: mebibyte))
        checkTiling(state, size: 2 * mebibyte + 72_000)
    }

    /// Bytes held until the next answer proves where theirs ended (a request went ahead) are the
    /// connection's progress: it is not stalled while they come. They are not written bytes until
    /// committed.
    @Test func heldBytesAreProgressButNotWrittenUntilCommitted() {
        var state = table([4 * mebibyte], settings: .init(stallTimeout: .seconds(10)))
        _ = state.nextWindow(for: 0, now: at(0))
        write(&state, 0, 1000, at: 1)
        let held = state.hold(0, count: 5000, now: at(9))
        #expect(held == 5000)
        #expect(state.stalledConnections(now: at(11)).isEmpty)
        #expect(state.writtenBytes == 1000)
        let moved = state.commitHeld(0, count: 5000)
        #expect(moved)
        #expect(state.writtenBytes == 6000)
        #expect(state.stalledConnections(now: at(18.5)).isEmpty)
        #expect(state.stalledConnections(now: at(19)) == [0])
    }

    /// Connection 0 owns a 4 MiB piece and has fetched its first window, 256 KiB, at 1 MiB/s, its
    /// requests answered after `cost` seconds; it is reading its second window (a second of its
    /// speed).
    func ownerReadingItsSecondWindow(
        cost: Double, roundTrip: Duration = .milliseconds(20), settings: SegmentTable.Settings = .init()
    ) -> SegmentTable {
        var settings = settings
        settings.initialWindow = mebibyte / 4
        settings.roundTrip = roundTrip
        var state = table([4 * mebibyte, 4 * mebibyte], settings: settings)
        _ = state.nextWindow(for: 0, now: at(0))
        state.recordFirstByte(0, after: .milliseconds(Int64(cost * 1000)))
        write(&state, 0, mebibyte / 4, at: 0.25)
        #expect(state.nextWindow(for: 0, now: at(0.25))?.1 == .continued)
        return state
    }

    /// Where a request costs 50 ms, a connection at 1 MiB/s sends its next request three request
    /// costs before its answer ends (157 kB): the next window is more of its piece, right after the
    /// current one, and sized as any of its windows. Its answer is its own when the current answer
    /// has ended; an idle connection takes waiting work, not the window asked for ahead.
    @Test func aRequestGoesAheadThreeRequestCostsBeforeItsAnswerEnds() throws {
        var state = ownerReadingItsSecondWindow(cost: 0.05)
        let lead = try #require(state.aheadLead(for: 0))
        #expect(lead == Int64(Double(mebibyte) * 3 * 0.05))
        // At least 64 KiB where requests cost little.
        #expect(ownerReadingItsSecondWindow(cost: 0.005).aheadLead(for: 0) == 64 << 10)
        let current = try #require(state.piece(of: 0)).windowEnd
        let asked = state.windowAhead(for: 0)
        let ahead = try #require(asked)
        #expect(ahead.piece == 0)
        #expect(ahead.range.lowerBound == current)
        #expect(ahead.range.upperBound > current && ahead.range.upperBound <= 4 * mebibyte)
        #expect(state.piece(of: 0)?.windowEnd == ahead.range.upperBound)
        let other = state.nextWindow(for: 1, now: at(0.3))
        #expect(other?.1 == .waiting)
        write(&state, 0, current - mebibyte / 4, at: 0.5)
        let taken = state.takeAhead(0, ahead, now: at(0.5))
        #expect(taken)
        let length = Int64(ahead.range.count)
        #expect(state.claim(0, count: length) == length)
        checkTiling(state, size: 8 * mebibyte)
    }

    /// A connection retired after it asked for its next window ahead finishes its current request
    /// (it ends soon), not the window asked for ahead: that goes back to wait for another, and its
    /// answer is not read.
    @Test func aRetiredConnectionFinishesItsRequestNotTheWindowAskedForAhead() throws {
        var state = ownerReadingItsSecondWindow(cost: 0.05)
        let current = try #require(state.piece(of: 0)).windowEnd
        let asked = state.windowAhead(for: 0)
        let ahead = try #require(asked)
        write(&state, 0, current - mebibyte / 4 - 100_000, at: 0.5)
        state.release(0)
        #expect(state.piece(of: 0)?.end == current)
        #expect(state.pieces.contains { $0.start == current && $0.owner == nil })
        write(&state, 0, 100_000, at: 0.6)
        let taken = state.takeAhead(0, ahead, now: at(0.6))
        #expect(!taken)
        checkTiling(state, size: 8 * mebibyte)
    }

    /// No request goes ahead where it does not pay or may not: a round trip shorter than 2 ms
    /// (loopback, where requests may well cost 50 ms on a loaded machine), the connection's speed
    /// not measured yet, the limit is shared (small windows one request deep),
    /// or a server left one unanswered (then no connection sends one, not even one whose lead was
    /// taken before: with two connections sending ahead, the second went on after the first was not
    /// proven).
    @Test func noRequestGoesAheadWhereItDoesNotPay() {
        #expect(
            ownerReadingItsSecondWindow(cost: 0.05, roundTrip: .microseconds(100)).aheadLead(for: 0) == nil)
        var unmeasured = table([4 * mebibyte], settings: .init(roundTrip: .milliseconds(20)))
        _ = unmeasured.nextWindow(for: 0, now: at(0))
        unmeasured.recordFirstByte(0, after: .milliseconds(20))
        #expect(unmeasured.aheadLead(for: 0) == nil)
        var shared = SegmentTable.Settings()
        shared.sharedLimit = true
        #expect(ownerReadingItsSecondWindow(cost: 0.02, settings: shared).aheadLead(for: 0) == nil)
        var stopped = ownerReadingItsSecondWindow(cost: 0.02)
        #expect(stopped.aheadLead(for: 0) != nil)
        stopped.stopRequestsAhead()
        #expect(stopped.aheadLead(for: 0) == nil)
        #expect(stopped.windowAhead(for: 0) == nil)
    }

    /// A window asked for ahead that a hedge took meanwhile is not the connection's any more: its
    /// answer is not read into the file. A 100 kB/s owner asked for 200–300 kB of its piece; a
    /// connection at 4 MiB/s with nothing left hedges the piece, leaving the owner what it brings in
    /// the hedge's grace.
    @Test func aWindowAskedForAheadAndHedgedMeanwhileIsNotTheOwners() throws {
        var state = table([4 * mebibyte, mebibyte], settings: .init(initialWindow: 100_000))
        _ = state.nextWindow(for: 0, now: at(0))
        state.recordFirstByte(0, after: .milliseconds(20))
        for step in 1...4 { write(&state, 0, 25_000, at: 0.25 * Double(step)) }
        #expect(state.nextWindow(for: 0, now: at(1))?.0.range == 100_000..<200_000)
        let asked = state.windowAhead(for: 0)
        let ahead = try #require(asked)
        #expect(ahead.range == 200_000..<300_000)
        _ = state.nextWindow(for: 1, now: at(0))
        write(&state, 1, mebibyte, at: 0.25)
        let hedge = state.nextWindow(for: 1, now: at(1.05))
        guard case .hedged(from: 0, let cut)? = hedge?.1 else {
            Issue.record("expected a hedge of connection 0, got \(String(describing: hedge))")
            return
        }
        #expect(cut < ahead.range.lowerBound)
        write(&state, 0, cut - 100_000, at: 1.2)
        let taken = state.takeAhead(0, ahead, now: at(1.2))
        #expect(!taken)
        #expect(state.claim(0, count: 1000) == 0)
        checkTiling(state, size: 5 * mebibyte)
    }

    /// The last connection still running is a straggler with a small tail, every fast one gone (the
    /// last to leave were stragglers too): a connection opened now would take that tail whole, so the
    /// fetch loop is told there is an opening. Before, newcomers were judged by the latest leavers
    /// alone (nearly as slow as the owner) and no opening was seen for a tail below the smallest
    /// hedge: the download waited half a second for 75 kB.
    @Test func atTheEndAStragglersSmallTailIsAnOpening() {
        let fast = 20
        let slow = 9
        let owner = fast + slow
        var settings = SegmentTable.Settings(initialWindow: mebibyte)
        settings.rateSample = .milliseconds(10)
        var state = table(Array(repeating: mebibyte, count: owner) + [200_000], settings: settings)
        for worker in 0..<owner { _ = state.nextWindow(for: worker, now: at(0)) }
        // 20 connections at 20 MB/s finish and leave, then 9 at 1 MB/s.
        for worker in 0..<fast {
            for step in 1...4 { write(&state, worker, mebibyte / 4, at: 0.0131 * Double(step)) }
            state.leave(worker)
        }
        for worker in fast..<owner {
            for step in 1...4 { write(&state, worker, mebibyte / 4, at: 0.262 * Double(step)) }
            state.leave(worker)
        }
        // The owner brings 150 kB at 300 kB/s, a third of the latest leavers' speed; 50 kB are left.
        let now = 1.05 + 0.5
        _ = state.nextWindow(for: owner, now: at(1.05))
        for step in 1...6 { write(&state, owner, 25_000, at: 1.05 + 0.5 * Double(step) / 6) }
        #expect(state.openings(now: at(now)) == 1)
        let next = state.nextWindow(for: owner + 1, now: at(now))
        #expect(next?.1 == .hedged(from: owner, at: Int64(owner) * mebibyte + 150_000))
    }

    /// An owner as fast as its peers that went quiet for a moment (a busy machine did not run it)
    /// keeps its small tail: cutting it would drop what its socket already holds, and it catches up.
    /// Quiet for a second, at the end, it is taken over: an answer that stopped (a server stalled
    /// it) otherwise held the download's last bytes for the whole stall timeout.
    @Test func aBrieflyQuietFastOwnerKeepsItsSmallTail() {
        var state = ownerBesideAFinishedPeer(owning: 1_000_000, writes: 19, of: 50_000, every: 0.025)
        // 50 kB left, its owner silent since 0.475 s.
        let next = state.nextWindow(for: 1, now: at(1.2))
        #expect(next == nil)
        var stopped = state
        #expect(state.claim(0, count: 50_000) == 50_000)
        let taken = stopped.nextWindow(for: 1, now: at(1.5))
        #expect(taken?.1 == .hedged(from: 0, at: 950_000))
        #expect(stopped.claim(0, count: 1) == 0)
    }

    /// A connection that asks for its next window has nothing in flight: bytes it claimed and never
    /// wrote (its answer failed after the claim) come in its next window, not never.
    @Test func aConnectionAskingAgainStartsAtItsFirstUnwrittenByte() {
        var state = table([4 * mebibyte])
        _ = state.nextWindow(for: 0, now: at(0))
        #expect(state.claim(0, count: 300_000) == 300_000)
        state.commit(0, count: 100_000, now: at(0.01))
        let next = state.nextWindow(for: 0, now: at(0.02))
        #expect(next?.0.range.lowerBound == 100_000)
        #expect(next?.1 == .continued)
        checkTiling(state, size: 4 * mebibyte)
    }

    /// A connection whose lease reached its piece's end and that then went silent has nothing left to
    /// give back, and is closed all the same after the stall timeout: it owns the piece still, and
    /// asks again from its first unwritten byte.
    @Test func aSilentConnectionThatClaimedItsWholePieceIsClosed() {
        var settings = SegmentTable.Settings(initialWindow: 1 << 20)
        settings.stallTimeout = .seconds(1)
        var state = table([mebibyte], settings: settings)
        _ = state.nextWindow(for: 0, now: at(0))
        #expect(state.claim(0, count: mebibyte) == mebibyte)
        state.commit(0, count: 100_000, now: at(0.01))
        #expect(state.stalledConnections(now: at(0.5)) == [])
        #expect(state.stalledConnections(now: at(1.1)) == [0])
        #expect(state.pieces.count == 1)
        #expect(state.pieces[0].owner == 0)
        state.unclaim(0, count: mebibyte - 100_000)
        #expect(state.nextWindow(for: 0, now: at(1.2))?.0.range.lowerBound == 100_000)
        checkTiling(state, size: mebibyte)
    }

    /// A connection that claimed ahead of its reads (``ClaimLease``) and stopped gives back what it
    /// did not write: its next window starts at its first unwritten byte, never past it, and nothing
    /// goes below what it wrote.
    @Test func bytesClaimedAheadAndNotWrittenGoBack() {
        var state = table([4 * mebibyte])
        let window = state.nextWindow(for: 0, now: at(0))
        #expect(window?.0.range.lowerBound == 0)
        #expect(state.claim(0, count: 300_000) == 300_000)
        state.commit(0, count: 100_000, now: at(0.01))
        state.unclaim(0, count: 200_000)
        #expect(state.pieces[0].claimed == 100_000)
        let next = state.nextWindow(for: 0, now: at(0.02))
        #expect(next?.0.range.lowerBound == 100_000)
        #expect(next?.1 == .continued)
        // More than was claimed and not written: only down to what is written.
        #expect(state.claim(0, count: 50_000) == 50_000)
        state.commit(0, count: 20_000, now: at(0.03))
        state.unclaim(0, count: 1_000_000)
        #expect(state.pieces[0].claimed == 120_000)
        // Another connection's unclaim changes nothing of a piece it does not own.
        _ = state.nextWindow(for: 1, now: at(0.04))
        let claimed = state.pieces.map(\.claimed)
        state.unclaim(1, count: 0)
        state.unclaim(2, count: 10_000)
        #expect(state.pieces.map(\.claimed) == claimed)
        checkTiling(state, size: 4 * mebibyte)
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

extension Int {
    var int64: Int64 { Int64(self) }
}
