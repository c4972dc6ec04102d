import FastpullNet
import Synchronization

/// One clock for the progress events of every running download (and its lowest-speed check): a
/// single task sleeps for the interval and then tells each registered download to report, where each
/// download used to sleep on a timer of its own. Every such timer woke the dispatch manager thread
/// when it was set and again when the download ended before it: a fifth of all the thread wake-ups of
/// a batch of small files.
///
/// A download's reports come about once per interval; the first at least half an interval after it
/// registered (``ProgressBeat``), so that its speed is measured over some time.
package final class ProgressMetronome: Sendable {
    /// How often a progress event is sent while a download runs.
    package static let standardInterval: Duration = .seconds(1)

    /// The metronome of every download of this process.
    package static let shared = ProgressMetronome(interval: ProgressMetronome.standardInterval)

    /// Metronomes of other intervals (a short ``LowestSpeed`` is looked at more often), one each.
    private static let others = PlainMutex<[Duration: ProgressMetronome]>([:])

    /// The metronome that beats every `interval`, shared by every download of this process.
    package static func shared(every interval: Duration) -> ProgressMetronome {
        if interval == shared.interval { return shared }
        return others.withLock { others in
            if let found = others[interval] { return found }
            let made = ProgressMetronome(interval: interval)
            others[interval] = made
            return made
        }
    }

    package let interval: Duration

    private struct State {
        var nextID = 0
        var beats: [Int: @Sendable () -> Void] = [:]
        /// Whether the task that beats is running (it ends when it finds nobody registered).
        var running = false
    }

    /// A plain lock: every download of a batch registers and unregisters here, from as many lane
    /// threads as run files at once (``PlainMutex`` says why not the standard `Mutex`).
    private let state = PlainMutex(State())

    init(interval: Duration) {
        self.interval = interval
    }

    /// Calls `beat` at every beat until ``unregister(_:)`` with the returned identifier.
    package func register(_ beat: @escaping @Sendable () -> Void) -> Int {
        let (id, start) = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.beats[id] = beat
            defer { state.running = true }
            return (id, !state.running)
        }
        if start { Task.detached { await self.run() } }
        return id
    }

    package func unregister(_ id: Int) {
        // The beat (and what it holds of its download) is returned, so let go after the lock.
        _ = state.withLock { $0.beats.removeValue(forKey: id) }
    }

    /// How many are registered now.
    var count: Int { state.withLock { $0.beats.count } }

    private func run() async {
        while true {
            try? await AlarmClock.sleep(for: interval)
            let beats = state.withLock { state -> [@Sendable () -> Void]? in
                guard !state.beats.isEmpty else {
                    state.running = false
                    return nil
                }
                return state.beats.sorted { $0.key < $1.key }.map(\.value)
            }
            guard let beats else { return }
            for beat in beats { beat() }
        }
    }
}

/// A download's progress reports between two beats of the ``ProgressMetronome``: the speed of the
/// run since it started, and no report in the first half interval.
package final class ProgressBeat: Sendable {
    private let started: ContinuousClock.Instant
    private let earliest: Duration
    private let meter: Mutex<SpeedMeter>

    package init(started: ContinuousClock.Instant = .now, interval: Duration) {
        self.started = started
        earliest = interval / 2
        var meter = SpeedMeter()
        meter.add(bytes: 0, at: started)
        self.meter = Mutex(meter)
    }

    /// The speed to report for `bytes` fetched by `now`; nil in the first half interval.
    package func speed(bytes: Int64, now: ContinuousClock.Instant = .now) -> Double? {
        guard now - started >= earliest else { return nil }
        return meter.withLock { meter in
            meter.add(bytes: bytes, at: now)
            return meter.bytesPerSecond
        }
    }
}
