import Foundation

extension Pipeline {
    /// What each task of the fetch group ends with.
    enum GroupResult: Sendable {
        case digest([UInt8])
        case fetcher(Int, SegmentFetcher.Outcome)
        case checkpointerDone
        case tick
    }

    /// How often the fetch loop looks at stalls and the connection count.
    static let tickInterval: Duration = .milliseconds(50)

    /// Runs the prefix hasher, the checkpointer and the connections, each on a thread of its own, and
    /// returns the file's SHA-256 once every byte is written and hashed. The loop here is the only
    /// place that starts connections: at first, as the adaptive ramp raises the count, and to replace
    /// stalled or failed ones while work is left.
    ///
    /// `hash` follows the written prefix and returns the file's SHA-256 once all of it is in (nil if the
    /// scheduler stopped first): the prefix hasher for the `.part` file, the drain of an ordered output.
    /// `checkpointer` saves the journal, where there is one.
    func fetchSegments(
        plan: Plan, remote: RemoteFile, destination: any ByteDestination, scheduler: Scheduler,
        checkpointer: Checkpointer?, hash: @escaping @Sendable () throws -> [UInt8]?, pool: ConnectionPool,
        policy: RetryPolicy, executors: ExecutorSet, roundTrip: Duration, trace: TraceRecorder?
    ) async throws -> (sha256: [UInt8], peakConnections: Int) {
        let host = Origin(remote.finalURL)?.host ?? ""
        let perHost = max(configuration.maximumConnectionsPerHost, 1)
        let download = download
        // Connections beyond the descriptors left (ulimit -n) would only fail: fewer start.
        let fitting = DescriptorBudget.connections() ?? Int.max
        if fitting < configuration.connectionLimit {
            download.emit(
                .warning(
                    "only \(fitting) connections fit in the open-file limit (ulimit -n \(DescriptorBudget.limit ?? 0)); using at most \(fitting)"
                ))
        }
        var ramp: ConnectionRamp
        switch configuration.connections {
        case .fixed(let count): ramp = ConnectionRamp(fixed: min(count, plan.connections, fitting))
        case .automatic:
            ramp = ConnectionRamp(
                automaticUpTo: min(configuration.maximumConnections, fitting), work: scheduler.pieceCount,
                step: ConnectionRamp.step(forRoundTrip: roundTrip))
        }
        let makeFetcher = { @Sendable (worker: Int, slot: CancellationSlot) in
            SegmentFetcher(
                worker: worker, remote: remote, size: plan.size, pool: pool, destination: destination,
                scheduler: scheduler,
                counters: counters, retries: configuration.retries, policy: policy, slot: slot, trace: trace,
                emit: { download.emit($0) })
        }
        // The loop and its ticks (stalls, slow connections, the ramp) run on a thread of their own, so
        // an application that keeps the cooperative pool busy cannot hold the scheduler's heartbeat.
        return try await withTaskExecutorPreference(executors.control) {
            try await fetchGroup(
                hash: hash, scheduler: scheduler, checkpointer: checkpointer, executors: executors,
                ramp: ramp, host: host, perHost: perHost, trace: trace, makeFetcher: makeFetcher)
        }
    }

    private func fetchGroup(
        hash: @escaping @Sendable () throws -> [UInt8]?, scheduler: Scheduler, checkpointer: Checkpointer?,
        executors: ExecutorSet,
        ramp: ConnectionRamp, host: String, perHost: Int, trace: TraceRecorder?,
        makeFetcher: @escaping @Sendable (Int, CancellationSlot) -> SegmentFetcher
    ) async throws -> (sha256: [UInt8], peakConnections: Int) {
        let download = download
        var ramp = ramp
        return try await withTaskCancellationHandler {
            try await withThrowingTaskGroup(of: GroupResult.self) { group in
                group.addTask(executorPreference: executors[0]) {
                    guard let digest = try hash() else { throw CancellationError() }
                    return .digest(digest)
                }
                if let checkpointer {
                    group.addTask(executorPreference: executors[1]) {
                        try await checkpointer.run()
                        return .checkpointerDone
                    }
                }
                group.addTask {
                    try? await Task.sleep(for: Self.tickInterval)
                    return .tick
                }

                var slots: [Int: CancellationSlot] = [:]
                // Workers asked to finish because fewer connections do as well; still in `slots`.
                var retiring: Set<Int> = []
                var nextWorker = 0
                var peak = 0
                var lastFailure: FastpullError?
                var replacementRounds = 0
                // Give-ups in a row with no byte written anywhere in between: the global failure budget.
                // Without it the tick would replace connections that fail the same way forever.
                var fruitlessGiveUps = 0
                var bytesAtLastGiveUp: Int64 = -1
                var digest: [UInt8]?
                var shedWarned = false

                /// Retires the newest connections until `target` remain: each gives back its range past
                /// what it claimed and ends at once.
                func retire(downTo target: Int) {
                    let active = slots.keys.filter { !retiring.contains($0) }.sorted()
                    guard active.count > target else { return }
                    for worker in active.suffix(active.count - target) {
                        retiring.insert(worker)
                        slots[worker]?.retire()
                        scheduler.release(worker)
                    }
                    trace?.record("connections", ["count": target])
                    download.emit(.connections(target))
                }

                func spawn(upTo target: Int) {
                    var started = 0
                    while slots.count - retiring.count < target, scheduler.hasWorkForAnotherConnection {
                        guard HostConnectionLimiter.shared.acquire(host, limit: perHost) else { break }
                        let worker = nextWorker
                        nextWorker += 1
                        let slot = CancellationSlot()
                        slots[worker] = slot
                        let fetcher = makeFetcher(worker, slot)
                        // New connections start a little apart rather than all in the same instant.
                        let stagger = Duration.milliseconds(started * 3)
                        started += 1
                        group.addTask(executorPreference: executors[worker + 2]) {
                            defer { HostConnectionLimiter.shared.release(host) }
                            if stagger > .zero { try await Task.sleep(for: stagger) }
                            return .fetcher(worker, try await fetcher.run())
                        }
                    }
                    peak = max(peak, slots.count - retiring.count)
                    if started > 0 {
                        trace?.record("connections", ["count": slots.count - retiring.count])
                        download.emit(.connections(slots.count - retiring.count))
                    }
                }

                spawn(upTo: ramp.target)
                // the first step starts now
                _ = ramp.observe(
                    written: scheduler.writtenBytes, hashed: scheduler.hashedBytes,
                    frontier: scheduler.frontier,
                    now: .now)
                do {
                    for try await result in group {
                        switch result {
                        case .digest(let value):
                            digest = value
                        case .fetcher(let worker, let outcome):
                            slots[worker] = nil
                            retiring.remove(worker)
                            executors.retire(worker + 2)
                            switch outcome {
                            case .finished, .retired: break
                            case .refused: ramp.refused(working: slots.count)
                            case .shed(let error):
                                ramp.refused(working: slots.count)
                                if !shedWarned {
                                    shedWarned = true
                                    download.emit(
                                        .warning("\(error.message); going on with \(slots.count) connections")
                                    )
                                }
                            case .gaveUp(let error):
                                lastFailure = error
                                let written = scheduler.writtenBytes
                                fruitlessGiveUps = written == bytesAtLastGiveUp ? fruitlessGiveUps + 1 : 1
                                bytesAtLastGiveUp = written
                                if fruitlessGiveUps > 2 * max(ramp.target, 1) { throw error }
                            }
                            if slots.isEmpty, !scheduler.isComplete {
                                // Nobody left while work is: start afresh, but not forever.
                                if let lastFailure {
                                    replacementRounds += 1
                                    if replacementRounds > 2 { throw lastFailure }
                                }
                                spawn(upTo: max(ramp.target, 1))
                                if slots.isEmpty {
                                    throw lastFailure
                                        ?? FastpullError(.internalError, "no connection could be started")
                                }
                            }
                        case .checkpointerDone:
                            break
                        case .tick:
                            if digest == nil || !slots.isEmpty {
                                for worker in scheduler.takeStalledConnections() {
                                    slots[worker]?.evict()
                                }
                                let target = ramp.observe(
                                    written: scheduler.writtenBytes, hashed: scheduler.hashedBytes,
                                    frontier: scheduler.frontier,
                                    now: .now)
                                let active = slots.count - retiring.count
                                if active < target {
                                    spawn(upTo: target)
                                } else if active > target {
                                    retire(downTo: target)
                                }
                                group.addTask {
                                    try? await Task.sleep(for: Self.tickInterval)
                                    return .tick
                                }
                            }
                        }
                        // Everything is fetched and hashed: the checkpointer can stop.
                        if digest != nil && slots.isEmpty { group.cancelAll() }
                    }
                } catch {
                    scheduler.stop()
                    throw error
                }
                guard let digest else { throw lastFailure ?? CancellationError() }
                return (digest, peak)
            }
        } onCancel: {
            scheduler.stop()
        }
    }
}
