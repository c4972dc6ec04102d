import Testing

@testable import Fastpull
@testable import FastpullEngine

@Suite("FetchLoop: starting and ending connections")
struct FetchLoopTests {
    let t0 = ContinuousClock.now

    func situation(at seconds: Double, hasWork: Bool, complete: Bool = false) -> FetchLoop.Situation {
        FetchLoop.Situation(
            sample: .init(now: t0 + .milliseconds(Int64(seconds * 1000)), bytes: 0, cpuSeconds: 0),
            hasWork: hasWork, isComplete: complete)
    }

    /// The last connection ends with nothing left to fetch, yet the file is incomplete: the hash is
    /// still checking a piece it may send back. Before: the download failed at once ("no connection
    /// could be started"), before the bad piece came back. Now it waits, starts a connection at the
    /// tick that finds the piece back, and fails only after ``FetchLoop/longestIdle`` without work.
    @Test func aPieceTheHashSendsBackFindsAConnection() {
        var loop = FetchLoop(controller: ConnectionController(fixed: 1))
        #expect(loop.start(situation(at: 0, hasWork: true)).contains(.spawn(0)))
        let ended = loop.ended(0, .finished, situation(at: 0.5, hasWork: false))
        #expect(!ended.contains { if case .fail = $0 { true } else { false } }, "\(ended)")
        #expect(loop.tick(situation(at: 0.6, hasWork: true)).contains(.spawn(1)))

        // Work, but the per-host limit is taken by other downloads: it waits for room too.
        var crowded = FetchLoop(controller: ConnectionController(fixed: 1))
        _ = crowded.start(situation(at: 0, hasWork: true))
        var full = situation(at: 0.5, hasWork: true)
        full.hostSlots = 0
        let refused = crowded.ended(0, .finished, full)
        #expect(!refused.contains { if case .fail = $0 { true } else { false } }, "\(refused)")
        #expect(crowded.tick(situation(at: 0.6, hasWork: true)).contains(.spawn(1)))

        var idle = FetchLoop(controller: ConnectionController(fixed: 1))
        _ = idle.start(situation(at: 0, hasWork: true))
        _ = idle.ended(0, .finished, situation(at: 0.5, hasWork: false))
        #expect(
            !idle.tick(situation(at: 5, hasWork: false)).contains {
                if case .fail = $0 { true } else { false }
            })
        let late = idle.tick(situation(at: 0.5 + FetchLoop.longestIdle.seconds + 0.1, hasWork: false))
        #expect(late.contains { if case .fail = $0 { true } else { false } }, "\(late)")
    }

    /// Connections left with nothing to do while one tail is worth hedging: a tick starts one
    /// connection for it, not as many as the count allows (the rest would start, find nothing and
    /// end, one after another). With waiting work, as many as the count allows.
    @Test func aTailToHedgeStartsOneConnection() {
        var loop = FetchLoop(controller: ConnectionController(fixed: 8))
        let started = loop.start(situation(at: 0, hasWork: true))
        #expect(started.count { if case .spawn = $0 { true } else { false } } == 8)
        for worker in 0..<8 { _ = loop.ended(worker, .finished, situation(at: 0.5, hasWork: false)) }
        var hedge = situation(at: 0.6, hasWork: true)
        hedge.openings = 1
        let ticked = loop.tick(hedge)
        #expect(ticked.count { if case .spawn = $0 { true } else { false } } == 1, "\(ticked)")
        let waiting = loop.tick(situation(at: 0.7, hasWork: true))
        #expect(waiting.count { if case .spawn = $0 { true } else { false } } == 7, "\(waiting)")
    }
}
