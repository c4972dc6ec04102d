import Testing

@testable import FastpullEngine

/// A connection that goes silent in the middle of an answer is judged against what the server shows
/// it can deliver, not left to the stall timeout (``SegmentTable/isSilent(_:_:peersRate:now:)``).
@Suite("Take-over of a silent connection")
struct SilentConnectionTests {
    let mebibyte: Int64 = 1 << 20
    let t0 = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant { t0 + .milliseconds(Int64(seconds * 1000)) }

    /// Four connections on four 64 MiB pieces, each bringing 400 kB every 50 ms (8 MB/s) for a
    /// second; the stall timeout is far away.
    func running(sharedLimit: Bool = false) -> SegmentTable {
        var settings = SegmentTable.Settings(initialWindow: 64 << 20, stallTimeout: .seconds(30))
        settings.sharedLimit = sharedLimit
        var start: Int64 = 0
        var state = SegmentTable(
            segments: (0..<4).map { _ in
                defer { start += 64 << 20 }
                return Segment(start: start, end: start + (64 << 20))
            }, settings: settings)
        for worker in 0..<4 { _ = state.nextWindow(for: worker, now: at(0)) }
        for step in 1...20 {
            for worker in 0..<4 { deliver(&state, worker, 400_000, at: Double(step) * 0.05) }
        }
        return state
    }

    func deliver(_ state: inout SegmentTable, _ worker: Int, _ count: Int64, at time: Double) {
        let allowed = state.claim(worker, count: count)
        state.commit(worker, count: allowed, now: at(time))
    }

    /// Worker 3 stops at 1 s while the others go on. Its reads came 50 ms apart: eight such gaps
    /// (0.4 s) of silence while the others deliver take its range over, long before the stall timeout.
    @Test func aSilentConnectionIsTakenOverWhileTheOthersDeliver() throws {
        var state = running()
        var stalledAt: Double?
        for step in 21...60 {
            let time = Double(step) * 0.05
            for worker in 0..<3 { deliver(&state, worker, 400_000, at: time) }
            let stalled = state.stalledConnections(now: at(time))
            if !stalled.isEmpty {
                #expect(stalled == [3])
                stalledAt = time
                break
            }
        }
        let when = try #require(stalledAt, "the silent connection was left to the stall timeout")
        // Not before eight of its gaps, and within a few more.
        #expect(when >= 1.4 && when <= 1.6, "taken over after \(when - 1) s of silence")
        // Its range waits from its first unwritten byte for another connection.
        #expect(state.claim(3, count: 10) == 0)
        let assigned = state.nextWindow(for: 4, now: at(when))
        let next = try #require(assigned)
        #expect(next.1 == .waiting)
        #expect(next.0.range.lowerBound == 192 * mebibyte + 20 * 400_000)
    }

    /// On a shared limit a connection may wait its turn while the others use the limit: silence
    /// while they deliver is no evidence. Once none of the others has anything left to bring (the
    /// end), the silence is: its range is taken over.
    @Test func onASharedLimitSilenceCountsOnlyWhenTheOthersAreDone() throws {
        var state = running(sharedLimit: true)
        for step in 21...60 {
            let time = Double(step) * 0.05
            for worker in 0..<3 { deliver(&state, worker, 400_000, at: time) }
            #expect(state.stalledConnections(now: at(time)).isEmpty, "at \(time) s")
        }
        // The others finish their pieces and have nothing else.
        for worker in 0..<3 {
            let rest = (state.piece(of: worker)?.end ?? 0) - (state.piece(of: worker)?.claimed ?? 0)
            deliver(&state, worker, rest, at: 3.05)
        }
        #expect(state.stalledConnections(now: at(3.05)) == [3])
    }

    /// A connection alone has no peer to show the server delivers: only the stall timeout applies.
    @Test func aConnectionAloneWaitsForTheStallTimeout() {
        var settings = SegmentTable.Settings(initialWindow: 64 << 20, stallTimeout: .seconds(10))
        settings.sharedLimit = false
        var state = SegmentTable(segments: [Segment(start: 0, end: 64 << 20)], settings: settings)
        _ = state.nextWindow(for: 0, now: at(0))
        for step in 1...20 { deliver(&state, 0, 400_000, at: Double(step) * 0.05) }
        #expect(state.stalledConnections(now: at(5)).isEmpty)
        #expect(state.stalledConnections(now: at(11)) == [0])
    }
}
