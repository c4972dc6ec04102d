import FastpullNet

/// Decides how many connections a download has, from what it measures, as a pure state machine: each
/// ``observe(_:)`` gets a ``Sample`` (bytes newly written and the process's CPU time so far) and
/// returns the count to have now, with the reason in ``reasonText``.
///
/// It measures the steps; the stated model (``ConnectionPolicy``, in ``model``) decides, by default.
/// The measured rules described below decide instead where `FASTPULL_CONNECTION_POLICY=rules` asks
/// for them: they stay beside the model for side-by-side runs until they are removed.
///
/// The policy in one paragraph: a fixed count stays fixed. `auto` starts with a few connections,
/// multiplies them by ``Settings/firstMultiplier`` at the first step, and doubles them every step
/// after while a doubling raises the throughput by ``Settings/gain`` (multiplies them by eight when
/// the connections already there lost nothing to the newcomers: the limit is each connection's own).
/// A step of many times the count whose newcomers took most of what the others had passed a shared
/// limit: half as many are tried at once. When a step does not pay, the limit is shared by all
/// connections (the link, the server, the CPU) and more only cost: it goes back to the count before
/// and halves while the throughput holds within ``Settings/tolerance``. It never settles for good:
/// while holding, it probes half again as many every ``Settings/probeInterval`` steps (a third fewer
/// at the maximum, where there is no more to try) and ramps on if that pays, and a throughput that
/// falls far below what it held starts a probe at once (the link changed). A probe counts only when
/// two steps in a row agree, and every other probe tries a third fewer, kept when the throughput
/// holds: so a lucky step on a noisy shared link cannot ratchet the count up for good. A step whose
/// CPU time reaches ``Settings/busyCPU`` of the machine's cores counts as no gain (the CPU is the
/// limit; more connections cannot help) unless the throughput grew nearly as the count did (the CPU
/// did not hold it back) or by the whole gain all the same (then it is kept, and trimmed while fewer
/// do as well), and while holding it trims. A server refusing extra connections
/// (``refused(working:)``) holds it at the connections that work, for a while. A moment in which the
/// machine is busy with something else slows every connection alike, which one step cannot tell from
/// a shared limit: a step up whose newcomers brought less than half of what the others lost is
/// measured twice, fewer that then do far better than the many ramp on, and fewer that lose in
/// proportion to the cut (a limit of each connection's own) start the ramp over, once.
///
/// A step is measured only once connections started or retired by the last change have had
/// ``Settings/warmUp`` to get going (TCP's slow start, a retiring connection's last window), and lasts
/// ``Settings/step``; both follow the round trip (``Settings/init(roundTrip:cores:)``).
package struct ConnectionController: Sendable, Equatable {
    struct Settings: Sendable, Equatable {
        /// Connections `auto` starts with.
        var initial = 4
        /// The most connections `auto` opens.
        var ceiling = 64
        /// The gain a step up must show to be kept.
        var gain = 0.15
        /// The loss a step down may show and still be kept.
        var tolerance = 0.05
        /// The newcomers of a step up cost the connections already there nothing when those keep this
        /// share of their throughput: the limit is each connection's own. A shared one halves them
        /// (when the step doubles the count); a busy machine and the server's scheduling take a
        /// little from them either way (10–20 % measured on two cores at a step of 8 or 16
        /// connections of 20 MB/s each; 25 % at a step from 4 to 8).
        var freeShare = 0.8
        /// How long a measurement lasts.
        var step: Duration = .milliseconds(200)
        /// The shortest measurement while holding, probing or trimming.
        var quietStep: Duration = .milliseconds(200)
        /// How long after a change the measurement starts.
        var warmUp: Duration = .milliseconds(100)
        /// Steps held between probes for more.
        var probeInterval = 8
        /// The machine's cores, for the CPU's share.
        var cores = 2
        /// The share of all cores' time that counts as CPU-bound.
        var busyCPU = 0.85
        /// The machine's busy share that counts as CPU-bound while the download itself uses at least
        /// ``busyOwnShare`` of the cores: a local server (or other work) holds the rest, and more
        /// connections would only take CPU from it.
        var busyMachine = 0.9
        var busyOwnShare = 0.25
        /// A held throughput falling below this share of the reference starts a probe.
        var decline = 0.6

        /// What the first step multiplies the count by (it has nothing to compare with). Eight: from 4,
        /// a per-connection limit has 32 running while the second step is measured, not 8, and the
        /// ceiling after it (on a download of a third of a second, those 40 ms at 8 connections were
        /// a tenth of its time). A shared limit costs little for it: the few lose most of what they had
        /// to the newcomers, and half as many are tried at once.
        var firstMultiplier = 8

        /// The defaults for a download whose connections take `roundTrip` to open and whose requests
        /// take `requestCost` to their first byte (a round trip, and an object store's time to find the
        /// object), on a machine with `cores` cores. The longer a connection waits, the more it takes to
        /// keep the path busy, so the more start (4; 8 from 10 ms, 16 from 30 ms, 32 from 60 ms, the
        /// ceiling from 100 ms); a step lasts three waits (50–500 ms), a warm-up one and a bit
        /// (10–300 ms). Holding and probing look for gains of a few tens of percent, not the doublings
        /// of a ramp: their steps last at least ``quietStep``, or they would measure TCP's sawtooth and
        /// a shaped link's bursts.
        init(roundTrip: Duration = .milliseconds(1), requestCost: Duration = .zero, cores: Int = 2) {
            let wait = max(roundTrip, requestCost)
            initial =
                wait >= .milliseconds(100)
                ? 64
                : wait >= .milliseconds(60)
                    ? 32 : wait >= .milliseconds(30) ? 16 : wait >= .milliseconds(10) ? 8 : 4
            step = min(max(wait * 3, .milliseconds(50)), .milliseconds(500))
            warmUp = min(max(wait + .milliseconds(10), .milliseconds(10)), .milliseconds(300))
            self.cores = max(cores, 1)
        }
    }

    /// What the download has done so far; every count only grows.
    struct Sample: Sendable, Equatable {
        var now: ContinuousClock.Instant
        /// Bytes written by this run (kept bytes of a resumed download do not count).
        var bytes: Int64
        /// CPU seconds the process has used.
        var cpuSeconds: Double
        /// The whole machine's CPU time (nil where unknown).
        var machine: MachineCPU.Reading? = nil
        /// Bytes written by each connection so far, by its number.
        var perConnection: [Int: Int64] = [:]
        /// Connections asked to stop that are still finishing their windows: while any is, what the
        /// others manage is not yet what they would manage alone.
        var retiring: Set<Int> = []
        /// What a request typically costs before its first byte, in seconds (0 when unknown): a step
        /// must span a few requests, or it measures their bursts.
        var requestCost = 0.0
        /// Bytes not written yet: near the end, throughput falls because work runs out, not because
        /// the link changed.
        var remaining = Int64.max
    }

    enum Phase: Sendable, Equatable {
        case fixed
        /// Multiplying the count while it pays.
        case ramping
        /// Halving while the throughput holds.
        case trimming
        /// At a count that works, probing for more now and then.
        case holding
        /// Trying half again as many.
        case probing
        /// Trying a third fewer.
        case probingDown
    }

    /// Why the count is what it is.
    enum Reason: String, Sendable, Equatable {
        case fixed, start, gain
        case noGain = "no gain"
        case cpuBound = "CPU-bound"
        case trim
        case trimLost = "trim lost"
        case probe
        case probeLost = "probe lost"
        case probeDown = "probe down"
        case probeDownHeld = "fewer do as well"
        /// Half as many after a step of eight did far better than the many: those were measured in a
        /// moment, not at a shared limit.
        case fewerDidBetter = "fewer did better"
        /// Fewer lost in proportion to the cut after a step up that did not pay, or after a step of
        /// eight whose few seemed to lose most of what they had: the limit is each connection's own
        /// after all, and the ramp starts over.
        case rampAgain = "ramp again"
        case decline = "throughput fell"
        case refused, held
        /// Started from what an earlier run of the same download learned (``LinkMemory``).
        case remembered
    }

    let settings: Settings
    var target: Int
    var phase: Phase
    var lastReason: Reason
    /// The most this download may open (the ceiling, or fewer when the work is smaller).
    let maximum: Int
    /// When the current measurement may begin.
    var measureFrom: ContinuousClock.Instant?
    /// The sample the current measurement started from.
    var base: Sample?
    /// The throughput to beat (ramping, probing) or to hold (trimming, holding).
    var reference: Double?
    /// The throughput of the latest step, in bytes per second (0 before the first).
    var throughput: Double = 0
    /// Bytes left at the latest step.
    var remainingBytes = Int64.max
    /// The count `reference` was measured at.
    var referenceCount: Int
    /// The connections `reference` was measured with.
    var incumbents: Set<Int> = []
    var heldSteps = 0
    /// Probes skipped after a server refused connections.
    var quietSteps = 0
    /// Held steps during which a busy CPU does not trim again: fewer just lost.
    var trimQuietSteps = 0
    /// Steps of the current probe that paid: a probe must pay twice in a row, or a shared link's
    /// noise would ratchet the count up one lucky step at a time.
    var paidSteps = 0
    /// Probes made since the last one down: every other probe tries fewer connections.
    var probesUp = 0
    /// Whether the current ramp step was already measured a second time (its newcomers had neither
    /// taken from the others nor added to the total: they had not started yet).
    var remeasured = false
    /// Whether the current probe down follows a step whose newcomers took most of what the others had:
    /// if fewer hold the throughput, the limit is shared (and taken for one).
    var sharedIfFewerHold = false
    /// A probe for fewer that lost, to check against the count it went back to: the count it tried,
    /// what that brought, and whether it followed a step past a shared limit. Once per download.
    var lostDown: LostProbe?
    var lostDownChecked = false
    /// Whether the current probe down follows a step of many times the count (the limit lies between).
    var downFromEight = false
    /// Whether the latest step of the current probe down lost (by far less than the cut).
    var lostOnce = false
    /// Whether the current probe down follows a ramp step that did not pay, read as a shared limit the
    /// few fill: if fewer lose in proportion to the cut, the limit is each connection's own (as after
    /// a step of eight, ``downFromEight``).
    var downFromRamp = false
    /// Whether the ramp already started over (``Reason/rampAgain``): once per download.
    var rampedAgain = false
    /// Whether the limit is shared by the connections and the few it started with fill it: a step up
    /// from them did not pay, and they lost what the newcomers got (a capped link, a busy server; not
    /// the CPU). False again once more connections pay.
    var limitIsShared = false

    /// The stated model's policy (``ConnectionPolicy``), the default; nil for the measured rules here,
    /// which it replaces and which stay for side-by-side runs (`FASTPULL_CONNECTION_POLICY=rules`).
    var model: ConnectionPolicy?

    /// Adaptive under ``ConnectionPolicy``, up to `maximum`, starting where an earlier run of the same
    /// download was when `memory` is given.
    init(modelUpTo maximum: Int, settings: Settings = Settings(), remembering memory: LinkMemory? = nil) {
        self.init(automaticUpTo: maximum, settings: settings)
        let model =
            memory.map { ConnectionPolicy(maximum: self.maximum, remembering: $0) }
            ?? ConnectionPolicy(initial: settings.initial, maximum: self.maximum)
        self.model = model
        target = model.target
        referenceCount = target
        phase = model.isRising ? .ramping : .holding
        limitIsShared = if case .shared = model.verdict { true } else { false }
    }

    /// What the table's windows follow of this count (``SegmentTable/tuned(_:to:)``). The model's next
    /// step may multiply the count by eight (newcomers that cost nothing); the rules' first step
    /// already had.
    var tuning: SegmentTable.Tuning {
        SegmentTable.Tuning(
            count: target, maximum: maximum, rising: phase == .ramping,
            ahead: model == nil ? 4 : ConnectionPolicy.freeMultiplier, throughput: throughput,
            shared: limitIsShared)
    }

    /// Why the count is what it is, in words.
    var reasonText: String { model?.decision.reason.rawValue ?? lastReason.rawValue }

    /// A fixed number of connections.
    init(fixed count: Int) {
        settings = Settings()
        target = max(count, 1)
        maximum = target
        phase = .fixed
        lastReason = .fixed
        referenceCount = target
    }

    /// Adaptive, up to `maximum` (at most the ceiling).
    init(automaticUpTo maximum: Int, settings: Settings = Settings()) {
        self.settings = settings
        self.maximum = max(1, min(maximum, settings.ceiling))
        target = min(settings.initial, self.maximum)
        referenceCount = target
        lastReason = .start
        phase = target < self.maximum ? .ramping : .holding
    }

    /// Adaptive, up to `maximum`, starting where an earlier run of the same download was
    /// (``LinkMemory``): at the count it held, holding, with the limit shared or not as it found. Its
    /// first probe comes after two steps, not eight (what was learned is checked soon): for fewer when
    /// the limit was shared (a count raised by a misread step is shed over the runs that follow, each
    /// of which a kill may cut short), for more when not. Then it probes as after any ramp.
    init(automaticUpTo maximum: Int, settings: Settings = Settings(), remembering memory: LinkMemory) {
        self.init(automaticUpTo: maximum, settings: settings)
        target = min(max(memory.connections, 1), self.maximum)
        referenceCount = target
        phase = .holding
        limitIsShared = memory.shared
        lastReason = .remembered
        heldSteps = max(settings.probeInterval - 2, 0)
        probesUp = memory.shared ? 1 : 0
    }

    /// What this download has learned of its link, once it holds a count it measured: that count, the
    /// throughput it held, and whether the limit is shared. Nil while it ramps or trims (the count is
    /// still moving) and for a fixed count.
    var learned: (connections: Int, bytesPerSecond: Double, shared: Bool)? {
        if let model { return model.learned }
        guard let reference, reference > 0 else { return nil }
        switch phase {
        // Trying fewer on a shared limit: those are what it expects to keep (a run resumed with too
        // few probes for more; with too many, each holds the server's buffers, lost at a kill).
        case .holding, .probingDown: return (target, reference, limitIsShared)
        case .probing: return (referenceCount, reference, limitIsShared)
        case .fixed, .ramping, .trimming: return nil
        }
    }

    /// A probe for fewer connections that lost.
    struct LostProbe: Sendable, Equatable {
        var count: Int
        var level: Double
        var shared: Bool
        /// It followed a step of many times the count.
        var fromEight: Bool
    }

    /// One measured step.
    struct Step {
        /// Bytes per second of all connections.
        var total: Double
        /// Bytes per second of the connections the reference was measured with (the incumbents).
        var incumbents: Double
        /// Whether connections that are leaving still took part (and so a share the others would get).
        var retiring: Bool
        /// Whether the CPU was the limit.
        var busy: Bool
        /// Whether it was judged so because the machine had next to nothing left (other work: a
        /// local server, the kernel's shaping), not because the download used most of the cores.
        var contended = false
        /// The connections that wrote during the step.
        var workers: Set<Int>
        /// The process's share of the machine's cores.
        var cpuShare = 0.0
    }

    /// How soon the loop should look again. While a ramp measures its steps, every 5 ms: a step is
    /// measured from the first look after its warm-up (or after the first bytes) to the first look
    /// after its length, so looks 25 ms apart would stretch a step of 50 ms and its warm-up of 10 to
    /// 75, and every step of the ramp is time at too few connections (looks 10 ms apart still put the
    /// first step up at 35 ms on loopback, where the measurement needs 12.5). Else every 25 ms (stalls,
    /// slow connections, holding).
    var tickInterval: Duration { phase == .ramping ? .milliseconds(5) : .milliseconds(25) }

    /// Feeds the download's progress; returns the count to have now.
    mutating func observe(_ sample: Sample) -> Int {
        guard phase != .fixed else {
            measureFixed(sample)
            return target
        }
        let from = measureFrom ?? sample.now
        guard sample.now >= from else {
            base = nil
            return target
        }
        // Nothing to measure before the first bytes come (connections still opening, a first byte still
        // on its way across a long round trip).
        guard let base, base.bytes > 0 || reference != nil else {
            self.base = sample.bytes > 0 ? sample : nil
            return target
        }
        let elapsed = (sample.now - base.now).seconds
        // The first measurement of a fresh ramp is a reference only: a quarter of a step is enough for
        // it (what the few connections there do; the step after it compares with them).
        let phaseStep = phase == .ramping ? settings.step : max(settings.step, settings.quietStep)
        let step = max(phaseStep.seconds, 3 * sample.requestCost)
        // The step after it, from the starting count to the first multiple, is the ramp's biggest
        // relative change: half a step tells it.
        let needed =
            if let model { step * model.measurementShare } else {
                reference == nil
                    ? step / 4 : phase == .ramping && referenceCount == settings.initial ? step / 2 : step
            }
        // Half as many after a step of eight are looked at from a quarter of the step on: if they
        // already carry far more than the many did, the many were measured in a moment
        // (``probeDown(_:now:)``), and every look at too few is time lost.
        let fewerMayDoBetter = phase == .probingDown && downFromEight
        // Under the model, fewer are looked at from a quarter of the step on too, for a loss beyond the
        // cut (``ConnectionPolicy/levelWasAMoment(_:)``).
        let earlyLook = model?.state == .descending && elapsed >= needed / 4 && elapsed < needed
        guard elapsed >= needed || fewerMayDoBetter && elapsed >= needed / 4 || earlyLook else {
            return target
        }
        var incumbents: Int64 = 0
        for worker in model?.incumbents ?? self.incumbents {
            if let now = sample.perConnection[worker], let then = base.perConnection[worker] {
                incumbents += now - then
            }
        }
        // While retiring connections finish their windows, the count is what the others do.
        var total = sample.bytes - base.bytes
        for worker in sample.retiring {
            total -= (sample.perConnection[worker] ?? 0) - (base.perConnection[worker] ?? 0)
        }
        var measured = Step(
            total: Double(total) / elapsed, incumbents: Double(incumbents) / elapsed,
            retiring: !sample.retiring.isEmpty,
            busy: isCPUBound(from: base, to: sample, elapsed: elapsed),
            workers: Set(sample.perConnection.filter { $0.value > (base.perConnection[$0.key] ?? 0) }.keys),
            cpuShare: (sample.cpuSeconds - base.cpuSeconds) / elapsed / Double(settings.cores))
        measured.contended = measured.busy && measured.cpuShare < settings.busyCPU
        if var model {
            // The model judges the connections the count has: those that stay (a connection that
            // left or is leaving carried its last window, not a share of this count's).
            var staying = measured
            var kept: Int64 = 0
            for (worker, bytes) in sample.perConnection where !sample.retiring.contains(worker) {
                kept += bytes - (base.perConnection[worker] ?? 0)
            }
            staying.total = Double(kept) / elapsed
            // Connections leaving when the step began still took their share of a shared link for
            // part of it: the step cannot say what the count alone does.
            staying.retiring = staying.retiring || !base.retiring.isEmpty
            let toBeat = model.reference ?? .infinity
            guard
                elapsed >= needed && !earlyLook || staying.total >= toBeat * (1 + settings.gain)
                    || earlyLook && model.levelWasAMoment(staying)
            else { return target }
            self.base = sample
            throughput = measured.total
            remainingBytes = sample.remaining
            let decision = model.judge(staying, remaining: sample.remaining)
            self.model = model
            follow(model, decision, now: sample.now)
            return target
        }
        guard elapsed >= needed || measured.total >= (reference ?? .infinity) * (1 + settings.gain) else {
            return target
        }
        self.base = sample
        throughput = measured.total
        remainingBytes = sample.remaining
        switch phase {
        case .fixed: break
        case .ramping: ramp(measured, now: sample.now)
        case .trimming: trim(measured, now: sample.now)
        case .holding: hold(measured, now: sample.now)
        case .probing: probe(measured, now: sample.now)
        case .probingDown: probeDown(measured, now: sample.now)
        }
        return target
    }

    /// Whether the CPU was the limit between two samples: the download used ``Settings/busyCPU`` of
    /// the cores, or a good share of them while the machine had next to none left.
    func isCPUBound(from base: Sample, to sample: Sample, elapsed: Double) -> Bool {
        let own = (sample.cpuSeconds - base.cpuSeconds) / elapsed / Double(settings.cores)
        if own >= settings.busyCPU { return true }
        guard own >= settings.busyOwnShare, let now = sample.machine, let then = base.machine,
            now.total > then.total
        else { return false }
        return (now.busy - then.busy) / (now.total - then.total) >= settings.busyMachine
    }

    /// A fixed count only measures (the windows follow the throughput).
    mutating func measureFixed(_ sample: Sample) {
        guard let base else {
            self.base = sample
            return
        }
        let elapsed = (sample.now - base.now).seconds
        guard elapsed >= settings.step.seconds else { return }
        throughput = Double(sample.bytes - base.bytes) / elapsed
        self.base = sample
    }

    /// Whether more connections paid: the total rose by the gain, or the connections there before kept
    /// their throughput (the newcomers took nothing from them: the limit is per connection) while the
    /// total rose by half the gain. The second reading does not wait for the newcomers' slow start;
    /// half the gain is still more than a shared link's noise between two steps.
    func paid(_ step: Step) -> (paid: Bool, free: Bool) {
        guard let reference, !step.busy else { return (false, false) }
        let free = step.incumbents >= reference * settings.freeShare
        let paid =
            step.total >= reference * (1 + settings.gain)
            || free && step.total >= reference * (1 + settings.gain / 2)
        return (paid, free)
    }

    /// How the throughput grew against how the count did: 1 when it grew in proportion (every newcomer
    /// brought as much as each connection before), 0 when it did not grow.
    static func grown(from before: Double, at beforeCount: Int, to after: Double, at count: Int)
        -> Double
    {
        (after / max(before, 1) - 1) / max(Double(count) / Double(max(beforeCount, 1)) - 1, 0.01)
    }

    /// Takes `step` as the new reference, measured at the current count.
    mutating func adopt(_ step: Step) {
        reference = step.total
        referenceCount = target
        incumbents = step.workers
    }

    /// Takes the model's count and what the table and the link memory read from it.
    mutating func follow(_ model: ConnectionPolicy, _ decision: PolicyDecision?, now: ContinuousClock.Instant)
    {
        phase = model.isRising ? .ramping : .holding
        limitIsShared = if case .shared = model.verdict { true } else { false }
        reference = model.reference
        referenceCount = model.referenceCount
        guard decision != nil, model.target != target else { return }
        target = model.target
        measureFrom = now + settings.warmUp
        base = nil
    }

    /// A server refused a connection (429/503) while `working` others transfer: hold at those, and do
    /// not probe for more for a while.
    mutating func refused(working: Int) {
        if var model {
            model.refused(working: working)
            self.model = model
            target = model.target
            phase = .holding
            return
        }
        guard phase != .fixed, working > 0 else { return }
        target = max(1, min(target, working))
        referenceCount = target
        phase = .holding
        heldSteps = 0
        quietSteps = 4 * settings.probeInterval
        endProbeDown()
        lastReason = .refused
    }
}
