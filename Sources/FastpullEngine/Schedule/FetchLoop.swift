/// The control loop of a segmented download as a pure state machine: which connections exist and
/// what each is doing, the connection controller, and the failure budget. Events go in — the loop
/// starts, time passes (``tick(_:)``), a connection ends (``ended(_:_:_:)``) — and actions come out,
/// for the caller to carry out after the call: start a connection, retire one, evict one, warn, fail.
/// The real loop runs the actions on threads and sockets; the simulator runs the same loop against
/// modelled servers.
package struct FetchLoop: Sendable {
    typealias Worker = Int

    /// How a connection ended.
    enum Outcome: Sendable, Equatable {
        /// No work was left for it.
        case finished
        /// It was retired: fewer connections do as well.
        case retired
        /// The server refused it (429/503) while others worked.
        case refused
        /// No file descriptor was left for it while others worked.
        case shed(FastpullError)
        /// It ran out of retries.
        case gaveUp(FastpullError)
    }

    /// What the caller does, in order, after an event.
    enum Action: Sendable, Equatable {
        /// Start a connection with this number.
        case spawn(Worker)
        /// Ask it to finish its window and stop: fewer do as well.
        case retire(Worker)
        /// Close its connection: it stalled or was far slower than its peers; it reconnects.
        case evict(Worker)
        /// The number of connections changed to this.
        case connections(Int)
        /// Tell the user.
        case warn(String)
        /// End the download with this error.
        case fail(FastpullError)
    }

    /// What the caller knows at the moment of an event.
    struct Situation: Sendable {
        var sample: ConnectionController.Sample
        /// Whether a connection joining now would get work.
        var hasWork: Bool
        /// How many connections joining now would get work, at most.
        var openings = Int.max
        /// Whether every byte is written.
        var isComplete: Bool
        /// Connections the scheduler found stalled or far too slow (their ranges already given back).
        var stalled: [Worker] = []
        /// How many more connections the per-host limit lets this download open now.
        var hostSlots = Int.max
        /// What each source brought, by source, when the file has several and they are counted each
        /// on its own (``SourceCounts``).
        var sources: [Int: SourceCounts.Reading]? = nil
    }

    /// One connection's state.
    enum WorkerState: Sendable, Equatable {
        case running
        /// Asked to stop after its window.
        case retiring
    }

    /// The download's count, or, where each source is counted on its own (``perSource``), the
    /// measurement of the download's throughput.
    private(set) var controller: ConnectionController
    /// Each source's count, for a download of several sources whose count is automatic.
    private(set) var perSource: SourceCounts?
    private(set) var workers: [Worker: WorkerState] = [:]
    private var nextWorker = 0
    /// The most connections that ran at once.
    private(set) var peak = 0
    private var lastFailure: FastpullError?
    /// Rounds of starting afresh after every connection gave up.
    private var replacementRounds = 0
    /// Give-ups in a row with no byte written in between: the global failure budget, without which a
    /// server failing every connection the same way would see them replaced forever.
    private var fruitlessGiveUps = 0
    private var bytesAtLastGiveUp: Int64 = -1
    private var shedWarned = false
    /// Since when no connection has run while the file is incomplete and nothing is left to fetch.
    private var idleSince: ContinuousClock.Instant?
    /// How long that may last before the download fails: a bound, for a hash that never comes back.
    static let longestIdle: Duration = .seconds(10)

    init(controller: ConnectionController) {
        self.controller = controller
    }

    /// Counts each source on its own (``SourceCounts``); `controller` measures the whole.
    init(perSource: SourceCounts, measuring controller: ConnectionController) {
        self.controller = controller
        self.perSource = perSource
    }

    /// Connections that are not retiring.
    var active: Int { workers.values.count { $0 == .running } }

    /// The most connections the download may have open at once, leaving ones included.
    var ceiling: Int { perSource?.ceiling ?? max(controller.maximum, 1) }

    /// The count to have now.
    var target: Int { perSource.map { max($0.total, 1) } ?? controller.target }

    /// How soon the loop should look again.
    var tickInterval: Duration { perSource?.tickInterval ?? controller.tickInterval }

    /// Why the count is what it is, in words.
    var reasonText: String { perSource?.reasonText ?? controller.reasonText }

    /// The latest decision of the model, with its evidence.
    var decision: PolicyDecision? { perSource?.latest?.decision ?? controller.model?.decision }

    /// What the table's windows follow of the count.
    var tuning: SegmentTable.Tuning {
        guard let perSource else { return controller.tuning }
        return SegmentTable.Tuning(
            count: target, maximum: perSource.ceiling, rising: perSource.isRising,
            ahead: ConnectionPolicy.freeMultiplier, throughput: controller.throughput,
            shared: perSource.allShared)
    }

    /// Feeds the sample to the count(s); returns the count to have now.
    private mutating func observe(_ sample: ConnectionController.Sample, _ situation: Situation) -> Int {
        guard var perSource else { return controller.observe(sample) }
        _ = perSource.observe(sample, sources: situation.sources ?? [:])
        self.perSource = perSource
        _ = controller.observe(sample)
        return target
    }

    /// Starts the first connections.
    ///
    /// `opening`: worker 0 holds the probe's answer and starts first, whether or not there is other
    /// work.
    mutating func start(_ situation: Situation, opening: Bool = false) -> [Action] {
        _ = observe(situation.sample, situation)
        guard opening, nextWorker == 0 else { return spawn(upTo: target, situation) }
        workers[0] = .running
        nextWorker = 1
        var rest = situation
        rest.hostSlots = max(situation.hostSlots - 1, 0)
        let spawned = spawn(upTo: target, rest)
        peak = max(peak, active)
        return [.spawn(0)] + (spawned.isEmpty ? [.connections(active)] : spawned)
    }

    /// Time passed: evicts stalled connections, asks the controller, and adds or retires connections.
    mutating func tick(_ situation: Situation) -> [Action] {
        if workers.isEmpty, !situation.isComplete, !situation.hasWork, let idleSince {
            guard situation.sample.now - idleSince < Self.longestIdle else {
                return [
                    .fail(
                        FastpullError(
                            .internalError,
                            "nothing was left to fetch for \(Self.longestIdle), yet the file is not complete")
                    )
                ]
            }
        } else {
            idleSince = nil
        }
        var actions = situation.stalled.filter { workers[$0] != nil }.map(Action.evict)
        var sample = situation.sample
        sample.retiring = Set(workers.filter { $0.value == .retiring }.keys)
        let target = observe(sample, situation)
        if active < target {
            actions += spawn(upTo: target, situation)
        } else if active > target {
            let first = perSource?.beyondAllowances(situation.sources ?? [:]) ?? []
            actions += retire(downTo: target, first: first)
        }
        return actions
    }

    /// A connection ended with `outcome`.
    mutating func ended(_ worker: Worker, _ outcome: Outcome, _ situation: Situation) -> [Action] {
        workers[worker] = nil
        var actions: [Action] = []
        switch outcome {
        case .finished, .retired:
            break
        case .refused:
            controller.refused(working: workers.count)
        case .shed(let error):
            controller.refused(working: workers.count)
            if !shedWarned {
                shedWarned = true
                actions.append(.warn("\(error.message); going on with \(workers.count) connections"))
            }
        case .gaveUp(let error):
            lastFailure = error
            let written = situation.sample.bytes
            fruitlessGiveUps = written == bytesAtLastGiveUp ? fruitlessGiveUps + 1 : 1
            bytesAtLastGiveUp = written
            if fruitlessGiveUps > 2 * max(target, 1) { return [.fail(error)] }
        }
        guard workers.isEmpty, !situation.isComplete else { return actions }
        // Nobody is left while work is: start afresh, but not forever.
        if let lastFailure {
            replacementRounds += 1
            if replacementRounds > 2 { return actions + [.fail(lastFailure)] }
        }
        let spawned = spawn(upTo: max(target, 1), situation)
        if workers.isEmpty {
            // Nothing failed, yet no connection could start: nothing is left to fetch now while the
            // hash still checks pieces (one it finds bad comes back to be fetched again), or other
            // downloads hold every connection the per-host limit allows. A tick starts connections
            // once there is work and room.
            if lastFailure == nil {
                idleSince = idleSince ?? situation.sample.now
                return actions
            }
            return actions + [
                .fail(lastFailure ?? FastpullError(.internalError, "no connection could be started"))
            ]
        }
        return actions + spawned
    }

    /// The caller could not start `worker` after all (the per-host limit was taken meanwhile).
    mutating func couldNotStart(_ worker: Worker) {
        workers[worker] = nil
    }

    private mutating func spawn(upTo target: Int, _ situation: Situation) -> [Action] {
        var actions: [Action] = []
        var slots = situation.hostSlots
        var openings = situation.openings
        // Connections asked to leave keep their sockets until their windows end: they count
        // against the most the download may have open, or a count that moves (a source's share
        // given to another) opened more than that at once.
        while active < target, workers.count < ceiling, slots > 0, openings > 0, situation.hasWork {
            openings -= 1
            let worker = nextWorker
            nextWorker += 1
            workers[worker] = .running
            slots -= 1
            actions.append(.spawn(worker))
        }
        peak = max(peak, active)
        if !actions.isEmpty { actions.append(.connections(active)) }
        return actions
    }

    /// Retires connections until `target` run: those in `first` (in its order), then the newest.
    private mutating func retire(downTo target: Int, first: [Worker] = []) -> [Action] {
        let running = workers.filter { $0.value == .running }.keys.sorted()
        guard running.count > target else { return [] }
        let preferred = first.filter { workers[$0] == .running }
        let order = preferred + running.reversed().filter { !preferred.contains($0) }
        var actions: [Action] = []
        for worker in order.prefix(running.count - target) {
            workers[worker] = .retiring
            actions.append(.retire(worker))
        }
        return actions + [.connections(active)]
    }
}
