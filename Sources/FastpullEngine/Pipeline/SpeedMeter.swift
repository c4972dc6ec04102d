/// Speed over the last few seconds, from samples of a growing byte count. Used by ``Download``'s
/// progress events and by the command line's progress view.
package struct SpeedMeter: Sendable {
    private var samples: [(bytes: Int64, time: ContinuousClock.Instant)] = []
    /// How far back the speed looks.
    package var window: Duration = .seconds(3)

    package init() {}

    /// Adds a sample; a count lower than the last one (a restart) starts over.
    package mutating func add(bytes: Int64, at time: ContinuousClock.Instant) {
        if let last = samples.last, bytes < last.bytes { samples.removeAll() }
        samples.append((bytes, time))
        // The window keeps at least two samples: a late sample (a busy machine) still has a speed.
        while samples.count > 2, let first = samples.first, time - first.time > window {
            samples.removeFirst()
        }
    }

    /// Bytes per second between the oldest and the newest sample; 0 with fewer than two.
    package var bytesPerSecond: Double {
        guard let first = samples.first, let last = samples.last, last.time > first.time else { return 0 }
        return Double(last.bytes - first.bytes) / (last.time - first.time).seconds
    }
}
