/// Decides how many connections a download should have. A fixed count stays fixed. `auto` starts
/// with a few and, every step, doubles them while the aggregate throughput
/// of the last step beat the step before by a margin; it settles at the first step that did not pay,
/// or at the maximum. A server refusing extra connections (429/503 while others work) settles it at
/// the connections that do work.
struct ConnectionRamp: Sendable, Equatable {
    enum Phase: Sendable, Equatable {
        case fixed
        case ramping
        case settled
    }

    /// Connections `auto` starts with.
    static let initialAuto = 6
    /// How often the throughput is compared.
    static let step: Duration = .milliseconds(250)
    /// The improvement a step must show to keep ramping.
    static let margin = 0.15

    private(set) var target: Int
    private(set) var phase: Phase
    let maximum: Int
    private var stepStart: ContinuousClock.Instant?
    private var stepBytes: Int64 = 0
    private var previousThroughput: Double?

    /// A fixed number of connections.
    init(fixed count: Int) {
        target = count
        maximum = count
        phase = .fixed
    }

    /// Adaptive: starts at `min(initialAuto, maximum, work)` where `work` is how many pieces there are.
    init(automaticUpTo maximum: Int, work: Int) {
        self.maximum = max(1, min(maximum, work))
        target = min(Self.initialAuto, self.maximum)
        phase = target < self.maximum ? .ramping : .settled
    }

    /// Feeds the download's total bytes at `now`; returns the (possibly raised) target.
    mutating func observe(totalBytes: Int64, now: ContinuousClock.Instant) -> Int {
        guard phase == .ramping else { return target }
        guard let start = stepStart else {
            stepStart = now
            stepBytes = totalBytes
            return target
        }
        let elapsed = (now - start).seconds
        guard elapsed >= Self.step.seconds else { return target }
        let throughput = Double(totalBytes - stepBytes) / elapsed
        stepStart = now
        stepBytes = totalBytes
        if let previous = previousThroughput, throughput < previous * (1 + Self.margin) {
            phase = .settled
            return target
        }
        previousThroughput = throughput
        target = min(maximum, target * 2)
        if target == maximum { phase = .settled }
        return target
    }

    /// A connection was refused with 429/503 while `working` others transfer: stop adding, and keep
    /// only those that work.
    mutating func refused(working: Int) {
        guard working > 0 else { return }
        target = min(target, working)
        if phase == .ramping { phase = .settled }
    }
}
