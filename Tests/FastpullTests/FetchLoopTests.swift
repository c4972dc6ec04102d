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

    /// Connections asked to leave keep their sockets until their windows end: they count against
    /// the most the download may have open. Per source, a share moved from one source to another
    /// retired some and started others at once (12 open under `--max-connections 10`).
    @Test func leavingConnectionsCountAgainstTheCeiling() {
        var loop = FetchLoop(
            perSource: SourceCounts(ceiling: 8, settings: ConnectionController.Settings()),
            measuring: ConnectionController(fixed: 8))
        var readings: [Int: SourceCounts.Reading] = [
            0: .init(live: true, bytes: 0, perConnection: [:]),
            1: .init(live: true, bytes: 0, perConnection: [:]),
        ]
        func at(_ seconds: Double) -> FetchLoop.Situation {
            var situation = situation(at: seconds, hasWork: true)
            situation.sources = readings
            return situation
        }
        let started = loop.start(at(0))
        #expect(started.count { if case .spawn = $0 { true } else { false } } == 8, "\(started)")
        readings[0]?.workers = [0, 2, 4, 6]
        readings[1]?.workers = [1, 3, 5, 7]
        // Source 1 stops serving: its four connections are asked to leave.
        readings[1]?.live = false
        let cut = loop.tick(at(0.1))
        #expect(cut.count { if case .retire = $0 { true } else { false } } == 4, "\(cut)")
        // It serves again at once, with a count of its own: the four leaving still hold their
        // sockets, so none starts yet.
        readings[1]?.live = true
        let back = loop.tick(at(0.2))
        #expect(loop.target == 8)
        #expect(!back.contains { if case .spawn = $0 { true } else { false } }, "\(back)")
        // As they end, others start.
        _ = loop.ended(1, .retired, at(0.3))
        _ = loop.ended(3, .retired, at(0.3))
        readings[1]?.workers = [5, 7]
        let later = loop.tick(at(0.4))
        #expect(later.count { if case .spawn = $0 { true } else { false } } == 2, "\(later)")
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
