/// The lowest speed a download must keep up (curl's `--speed-limit` and `--speed-time`): all
/// connections together slower than ``bytesPerSecond`` for ``duration`` and the download stops with
/// a network error, its progress saved for a later run. Without it, a server that drips a byte every
/// few seconds keeps every connection alive and the download never ends.
///
/// Waits for a retry do not count, nor the time the streaming hash needs to catch up with a resumed
/// download's kept bytes (its progress counts as progress), nor the time an output that takes the
/// bytes in order (standard output, a pipe) keeps the download waiting for its reader: that is the
/// reader's pace, not the network's. A reader that stops reading holds the download for as long as it
/// stays (as it holds `curl` or `cat`); one that goes away ends it.
public struct LowestSpeed: Sendable, Equatable {
    /// Bytes per second, all connections together.
    public var bytesPerSecond: Int64
    /// How long the download may stay below it.
    public var duration: Duration

    /// A floor of `bytesPerSecond` kept up over every `duration`.
    public init(bytesPerSecond: Int64, duration: Duration) {
        self.bytesPerSecond = bytesPerSecond
        self.duration = duration
    }

    /// 1 KiB/s over a minute: far below any working link, far above a server that drips bytes.
    public static let standard = LowestSpeed(bytesPerSecond: 1024, duration: .seconds(60))
}

/// Watches a running download's progress against a ``LowestSpeed``.
package struct SpeedWatch {
    package let floor: LowestSpeed
    private var samples: [(at: ContinuousClock.Instant, progress: Int64)] = []

    package init(floor: LowestSpeed) { self.floor = floor }

    /// How often to look.
    package var interval: Duration { min(max(floor.duration / 10, .milliseconds(50)), .seconds(1)) }

    /// Takes the progress (bytes fetched plus bytes hashed) at `now`; true when it has stayed below
    /// the floor for the whole duration. `waiting`: the download waits for a retry, which starts the
    /// measurement afresh. `outputWait`: how long the download has waited for the reader of its output
    /// in all, a wait under way included; the measurement's clock stands still meanwhile.
    package mutating func tooSlow(
        progress: Int64, waiting: Bool, outputWait: Duration = .zero, now: ContinuousClock.Instant
    ) -> Bool {
        guard !waiting else {
            samples.removeAll()
            return false
        }
        // The network's clock: the time the download did not wait for its reader.
        let now = now - outputWait
        // While the clock stands still the first sample of the stop stays: the bytes that came
        // meanwhile count once it goes on.
        if let last = samples.last, last.at >= now { return false }
        samples.append((now, progress))
        // Keep the newest sample at least `duration` old, and everything after it.
        while samples.count > 1, now - samples[1].at >= floor.duration { samples.removeFirst() }
        guard let oldest = samples.first, now - oldest.at >= floor.duration else { return false }
        let seconds = (now - oldest.at).seconds
        return Double(progress - oldest.progress) < Double(floor.bytesPerSecond) * seconds
    }
}
