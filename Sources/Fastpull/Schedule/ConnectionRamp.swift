/// Decides how many connections a download should have. A fixed count stays fixed. `auto` starts
/// with a few and, every step, doubles them while the aggregate throughput of the last step beat the
/// step before by a margin. When a doubling does not pay, the bottleneck is shared (the link, the
/// server, or this machine's CPU), not per connection: it goes back to the count before and then
/// halves it while the throughput holds within a tolerance, because every extra connection then only
/// costs (locks, context switches, requests). A server refusing extra connections (429/503 while
/// others work) settles it at the connections that do work.
struct ConnectionRamp: Sendable, Equatable {
    enum Phase: Sendable, Equatable {
        case fixed
        /// Doubling while it pays.
        case ramping
        /// Halving while the throughput holds.
        case trimming
        case settled
    }

    /// Connections `auto` starts with.
    static let initialAuto = 6
    /// The longest and shortest step between throughput comparisons (see ``step(forRoundTrip:)``).
    static let longestStep: Duration = .milliseconds(250)
    static let shortestStep: Duration = .milliseconds(100)
    /// The improvement a doubling must show to keep ramping.
    static let margin = 0.15
    /// The loss a halving may show and still be kept.
    static let tolerance = 0.10

    private(set) var target: Int
    private(set) var phase: Phase
    let maximum: Int
    /// How long each measurement lasts.
    let step: Duration
    private var stepStart: ContinuousClock.Instant?
    private var stepWritten: Int64 = 0
    private var stepHashed: Int64 = 0
    /// The throughput of the step before (ramping), or the one to hold (trimming: the last step before
    /// trimming began).
    private var reference: Double?
    /// The count the reference was measured at (ramping), or the fewest that held it (trimming).
    private var referenceCount = 0
    /// Set when connections were just retired: the next step only lets the rest settle (their
    /// ranges move to the connections that stay) and is not measured.
    private var settling = false

    /// A fixed number of connections.
    init(fixed count: Int) {
        target = count
        maximum = count
        phase = .fixed
        step = Self.longestStep
    }

    /// Adaptive: starts at `min(initialAuto, maximum, work)` where `work` is how many pieces there are,
    /// and compares the throughput every `step`.
    init(automaticUpTo maximum: Int, work: Int, step: Duration = ConnectionRamp.longestStep) {
        self.maximum = max(1, min(maximum, work))
        self.step = step
        target = min(Self.initialAuto, self.maximum)
        phase = target < self.maximum ? .ramping : .settled
    }

    /// A step long enough for TCP to show what a change did: four round trips, within the shortest
    /// and longest step. On a fast local link that decides in a tenth of a second what a long path
    /// needs a quarter of a second for.
    static func step(forRoundTrip roundTrip: Duration) -> Duration {
        min(max(roundTrip * 4, shortestStep), longestStep)
    }

    /// How far the hash must lag the bytes written for it to count as the bottleneck.
    static let hashBoundLag: Int64 = 32 << 20

    /// Feeds the download's progress at `now`: the bytes written and how far the streaming hash has
    /// read. While the hash lags more than ``hashBoundLag``, a step's throughput is the smaller of the
    /// two, so a burst of writes the hash has yet to catch up with does not pass for speed (and the
    /// hash re-reading a resumed prefix does not either); otherwise it is the bytes written.
    mutating func observe(
        written: Int64, hashed: Int64, frontier: Int64? = nil, now: ContinuousClock.Instant
    ) -> Int {
        guard phase == .ramping || phase == .trimming else { return target }
        guard let start = stepStart else {
            stepStart = now
            stepWritten = written
            stepHashed = hashed
            return target
        }
        let elapsed = (now - start).seconds
        // The first step is only a reference (it always doubles), so it lasts half as long.
        guard elapsed >= (reference == nil ? step.seconds / 2 : step.seconds) else { return target }
        let wrote = written - stepWritten
        // Only while the hash is far behind is it the bottleneck worth counting by; otherwise its
        // progress moves in jumps as pieces complete, too coarse for a short step.
        let hashBound = max(written - hashed, stepWritten - stepHashed) > Self.hashBoundLag
        // The bytes the hash could read now but has not: when they pile up, the hash (the CPU) is
        // what limits the download, and more connections cannot help.
        let hashBehind = (frontier ?? written) - hashed > Self.hashBoundLag
        let throughput = Double(hashBound ? min(wrote, hashed - stepHashed) : wrote) / elapsed
        stepStart = now
        stepWritten = written
        stepHashed = hashed
        if settling {
            settling = false
            return target
        }
        if phase == .ramping {
            ramp(throughput, hashBehind: hashBehind)
        } else {
            trim(throughput)
        }
        return target
    }

    private mutating func ramp(_ throughput: Double, hashBehind: Bool) {
        // At the maximum only a hash that is behind sends it back down; a doubling there could not
        // have paid more than the maximum allows.
        let atMaximum = target == maximum && reference != nil
        let gained = atMaximum || (reference.map { throughput >= $0 * (1 + Self.margin) } ?? true)
        guard gained && !hashBehind else {
            // The doubling did not pay, or the hash is behind (more connections cannot help): back to
            // the count before it, then see whether fewer do as well. The latest step is the steady
            // state to hold; the first one is inflated by empty socket buffers.
            target = reference == nil ? target : referenceCount
            self.reference = throughput
            guard target > 1 else {
                phase = .settled
                return
            }
            phase = .trimming
            target = max(1, target / 2)
            settling = true
            return
        }
        guard !atMaximum else {
            phase = .settled
            return
        }
        reference = throughput
        referenceCount = target
        // Reaching the maximum takes one more step: it settles there unless the hash fell behind.
        target = min(maximum, target * 2)
    }

    private mutating func trim(_ throughput: Double) {
        guard let reference, throughput >= reference * (1 - Self.tolerance) else {
            // Halving lost too much: the count before it was the right one.
            target = referenceCount
            phase = .settled
            return
        }
        referenceCount = target
        if target == 1 {
            phase = .settled
        } else {
            target = max(1, target / 2)
            settling = true
        }
    }

    /// A connection was refused with 429/503 while `working` others transfer: stop adding, and keep
    /// only those that work.
    mutating func refused(working: Int) {
        guard working > 0 else { return }
        target = min(target, working)
        if phase == .ramping || phase == .trimming { phase = .settled }
    }
}
