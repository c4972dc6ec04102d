import FastpullHTTP
import FastpullNet
import FoundationEssentials

extension Pipeline {
    /// What each task of the fetch group ends with.
    enum GroupResult: Sendable {
        case digest([UInt8])
        case fetcher(Int, SegmentFetcher.Outcome)
        case checkpointerDone
        case tick
    }

    /// Runs the prefix hasher, the checkpointer and the connections, each on a thread of its own, and
    /// returns the file's SHA-256 once every byte is written and hashed. The decisions (which
    /// connections to start, retire or evict, when to give up) are ``FetchLoop``'s; this carries them
    /// out.
    ///
    /// `hash` follows the written prefix and returns the file's SHA-256 once all of it is in (nil if the
    /// scheduler stopped first): the prefix hasher for the `.part` file, the drain of an ordered output.
    /// `checkpointer` saves the journal, where there is one. `link` holds what this download knows of
    /// its link: an automatic count starts from what an earlier run learned (``LinkMemory``), and what
    /// this one learns goes there for the journal.
    func fetchSegments(
        plan: Plan, remote: RemoteFile, destination: any ByteDestination, scheduler: Scheduler,
        checkpointer: Checkpointer?, hash: @escaping @Sendable () throws -> [UInt8]?, pool: ConnectionPool,
        policy: RetryPolicy, executors: ExecutorSet, roundTrip: Duration, requestCost: Duration,
        trace: TraceRecorder?, sources: SourceSet? = nil, map: SourceMap? = nil, mirrors: Int? = nil,
        opening: OpeningAnswer? = nil, link: LinkMemoryCell? = nil, wholeFile: WholeFileHandOff? = nil
    ) async throws -> (sha256: [UInt8], peakConnections: Int) {
        // The probe's answer goes to worker 0, which owns the first piece before any other starts.
        if let opening { opening.assign(scheduler.adopt(0, end: opening.end, requestCost: requestCost)) }
        let host = HostConnectionLimiter.key(for: remote.finalURL)
        let perHost = max(configuration.connections.maximumPerHost, 1)
        let download = download
        // Connections beyond the descriptors left (ulimit -n) would only fail: fewer start.
        DescriptorBudget.reserveSpares()
        let fitting = DescriptorBudget.connections() ?? Int.max
        if fitting < configuration.connectionLimit {
            download.emit(
                .warning(
                    "only \(fitting) connections fit in the open-file limit (ulimit -n \(DescriptorBudget.limit ?? 0)); using at most \(fitting)"
                ))
        }
        if configuration.connectionLimit > perHost {
            download.emit(
                .warning(
                    "at most \(perHost) connections go to one host (the per-host limit), not the \(configuration.connectionLimit) asked for"
                ))
        }
        let loop: FetchLoop
        switch configuration.connections.count {
        case .fixed(let count):
            loop = FetchLoop(
                controller: ConnectionController(fixed: min(count, plan.connections, fitting, perHost)))
        case .automatic:
            // Each connection needs at least a minimum split of work.
            let work = Int(clamping: max(plan.size / max(configuration.connections.minimumSegmentSize, 1), 1))
            var settings = ConnectionController.Settings(
                roundTrip: roundTrip, requestCost: requestCost,
                cores: ProcessInfo.processInfo.activeProcessorCount)
            let maximum = min(configuration.connections.maximum, fitting, perHost, work)
            let remembered = sources == nil ? link?.current : nil
            if ConnectionPolicy.rulesByEnvironment {
                // Several sources start with a few connections for each (those beyond the first
                // source's wait for the mirrors' probes): the ramp then only has to find more.
                if sources != nil, let mirrors {
                    settings.initial = max(
                        settings.initial, SourceSet.connectionsBeforeWaiting * (1 + mirrors))
                }
                loop = FetchLoop(
                    controller: remembered.map {
                        ConnectionController(automaticUpTo: maximum, settings: settings, remembering: $0)
                    } ?? ConnectionController(automaticUpTo: maximum, settings: settings))
            } else if sources != nil {
                // Several sources: each is counted on its own (``SourceCounts``).
                loop = FetchLoop(
                    perSource: SourceCounts(ceiling: maximum, settings: settings),
                    measuring: ConnectionController(fixed: maximum))
            } else {
                loop = FetchLoop(
                    controller: ConnectionController(
                        modelUpTo: maximum, settings: settings, remembering: remembered))
            }
        }
        let writePath = WritePath(
            file: destination.spliceTarget, size: plan.size,
            cores: ProcessInfo.processInfo.activeProcessorCount,
            forced: configuration.writePath ?? WritePath.forcedByEnvironment)
        let makeFetcher = { @Sendable (worker: Int, slot: CancellationSlot) in
            SegmentFetcher(
                worker: worker, remote: remote, size: plan.size, pool: pool, destination: destination,
                scheduler: scheduler, counters: counters, retries: configuration.retries.limit,
                policy: policy,
                slot: slot, trace: trace, emit: { download.emit($0) }, sources: sources, sourceMap: map,
                opening: worker == 0 ? opening : nil, writePath: writePath, wholeFile: wholeFile)
        }
        // The loop and its ticks (stalls, slow connections, the count) run on a thread of their own, and
        // its sleeps end on the alarm thread (``AlarmClock``), so an application that keeps the
        // cooperative pool or Dispatch's queues busy cannot hold the scheduler's heartbeat.
        return try await withTaskExecutorPreference(executors.control) {
            try await fetchGroup(
                hash: hash, scheduler: scheduler, checkpointer: checkpointer, executors: executors,
                loop: loop,
                places: DownloadPlaces(
                    limiter: download.resources.hosts, host: host, limit: perHost, ownPlace: ownPlace == host),
                trace: trace,
                sources: sources, opening: opening, link: link, makeFetcher: makeFetcher)
        }
    }

    private func fetchGroup(
        hash: @escaping @Sendable () throws -> [UInt8]?, scheduler: Scheduler, checkpointer: Checkpointer?,
        executors: ExecutorSet, loop: FetchLoop, places: DownloadPlaces, trace: TraceRecorder?,
        sources: SourceSet?, opening: OpeningAnswer?, link: LinkMemoryCell?,
        makeFetcher: @escaping @Sendable (Int, CancellationSlot) -> SegmentFetcher
    ) async throws -> (sha256: [UInt8], peakConnections: Int) {
        let download = download
        let counters = counters
        var loop = loop
        let kept = scheduler.writtenBytes
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
                let firstTick = loop.tickInterval
                group.addTask {
                    try? await AlarmClock.sleep(for: firstTick)
                    return .tick
                }
                var slots: [Int: CancellationSlot] = [:]
                var digest: [UInt8]?
                var stagger = 0

                /// What the loop needs to know now.
                func situation(stalled: [Int] = []) -> FetchLoop.Situation {
                    let reading = scheduler.reading()
                    return FetchLoop.Situation(
                        sample: .init(
                            now: .now, bytes: reading.written - kept, cpuSeconds: ProcessCPU.seconds,
                            machine: MachineCPU.now,
                            perConnection: reading.perConnection, requestCost: reading.requestCost,
                            remaining: reading.size - reading.written),
                        hasWork: reading.hasWork, openings: reading.openings, isComplete: reading.isComplete,
                        stalled: stalled,
                        hostSlots: places.available,
                        sources: loop.perSource == nil ? nil : sources?.readings(reading.bySource))
                }

                /// Carries out the loop's actions, in order.
                func perform(_ actions: [FetchLoop.Action]) throws {
                    // The table follows this tick's count and verdict before its actions: a
                    // connection retired because the limit was just found shared finishes its window.
                    scheduler.tune(to: loop.tuning)
                    for action in actions {
                        switch action {
                        case .spawn(let worker):
                            guard places.acquire() else {
                                loop.couldNotStart(worker)
                                if worker == 0, let opening {
                                    opening.discard()
                                    scheduler.leave(0)
                                }
                                continue
                            }
                            let slot = CancellationSlot()
                            slots[worker] = slot
                            let fetcher = makeFetcher(worker, slot)
                            // New connections start a little apart rather than all in the same
                            // instant; a quarter of a millisecond, so that a step to 64 has them all
                            // asking within 16 ms (at a millisecond apart, the last waited 56).
                            let delay = Duration.microseconds(250 * stagger)
                            stagger += 1
                            group.addTask(executorPreference: executors[worker + 2]) {
                                defer { places.release() }
                                if delay > .zero { try await AlarmClock.sleep(for: delay) }
                                return .fetcher(worker, try await fetcher.run())
                            }
                        case .retire(let worker):
                            slots[worker]?.retire()
                            scheduler.release(worker)
                        case .evict(let worker):
                            slots[worker]?.evict()
                        case .connections(let count):
                            let decision = loop.decision
                            trace?.record(
                                "connections",
                                [
                                    "count": count, "reason": loop.reasonText,
                                    "throughput": Int(loop.controller.throughput),
                                    "verdict": decision.map { "\($0.verdict)" } ?? "",
                                    "evidence": decision?.evidence?.description ?? "",
                                ])
                            download.emit(.connections(count))
                        case .warn(let message):
                            download.emit(.warning(message))
                        case .fail(let error):
                            throw error
                        }
                    }
                    link?.learn(from: loop.controller)
                    counters.targetConnections.store(loop.target, ordering: .relaxed)
                    if let allowances = loop.perSource?.allowances { sources?.allow(allowances) }
                }

                try perform(loop.start(situation(), opening: opening != nil))
                do {
                    for try await result in group {
                        switch result {
                        case .digest(let value):
                            digest = value
                        case .fetcher(let worker, let outcome):
                            slots[worker] = nil
                            executors.retire(worker + 2)
                            try perform(loop.ended(worker, outcome, situation()))
                        case .checkpointerDone:
                            break
                        case .tick:
                            stagger = 0
                            DescriptorBudget.keepOneFree()
                            // The connections of a source just dropped stop their requests and take
                            // their next windows from another source.
                            for worker in sources?.workersOnDroppedSources() ?? [] {
                                slots[worker]?.evict()
                            }
                            if digest == nil || !slots.isEmpty {
                                // Connections a shared source does not need end their windows soon
                                // and take their next ones where one more adds the most.
                                let now = situation(stalled: scheduler.takeStalledConnections())
                                sources?.sample(now.sample.perConnection, at: now.sample.now)
                                for worker in sources?.surplusWorkers() ?? [] { scheduler.release(worker) }
                                try perform(loop.tick(now))
                                let interval = loop.tickInterval
                                group.addTask {
                                    try? await AlarmClock.sleep(for: interval)
                                    return .tick
                                }
                            }
                        }
                        // Everything is fetched and hashed: the checkpointer can stop, and a
                        // connection still at work stops: one waiting for an answer whose bytes another
                        // connection's answer brought (on a server that answers one request at a
                        // time, that answer comes only now), one reading and dropping the rest of an
                        // answer that was cut (at a straggler's speed, 50 kB took 0.17 s).
                        if digest != nil && slots.isEmpty { group.cancelAll() }
                        if digest != nil {
                            for slot in slots.values { slot.evict() }
                        }
                    }
                } catch {
                    scheduler.stop()
                    throw error
                }
                guard let digest else { throw CancellationError() }
                return (digest, loop.peak)
            }
        } onCancel: {
            scheduler.stop()
        }
    }
}
