import FastpullHTTP
import FastpullNet
import FoundationEssentials
import Synchronization

/// Downloads `url` to `file` with parallel ranged connections and verifies it before it appears.
///
/// ```swift
/// let report = try await Fastpull.download(from: url, to: fileURL, configuration: .init(checksums: [.sha256(hex)]))
/// ```
///
/// - Returns: a ``Report`` of the verified file.
/// - Throws: ``FastpullError``; its ``FastpullError/code`` says what kind of failure it was.
public func download(from url: URL, to file: URL, configuration: Configuration = .init())
    async throws(FastpullError) -> Report
{
    try await FastpullClient.shared.download(from: url, to: file, configuration: configuration)
}

/// One download: create it, optionally watch ``events`` or ``progress`` from another task, and
/// ``run()`` it. Cancelling the task that runs it stops every connection promptly.
///
/// ```swift
/// let download = Download(from: url, to: fileURL)
/// let watcher = Task {
///     for await event in download.events {
///         if let progress = event.progress { print(progress.bytes) }
///     }
/// }
/// let report = try await download.run()
/// await watcher.value
/// ```
public final class Download: Sendable {
    /// The URL asked for.
    public let url: URL
    /// Where the verified file goes.
    public let destination: URL
    /// `destination` as a file system path, worked out once.
    package let destinationPath: String
    /// How the download runs.
    public let configuration: Configuration
    private let counters = TransferCounters()
    private let channel: Mutex<EventChannel>
    private let observer: (@Sendable (Event) -> Void)?
    /// Stops right after the probe (``plan()``).
    package let planOnly: Bool
    /// For a plan: probe with the file's first GET and keep its answer unread in the findings
    /// (``Probed/answer``), for the download that follows to read.
    package let keepsProbeAnswer: Bool
    /// Kept-alive connections shared with the other files of a batch (nil: the client's, for this
    /// download's kind of connection).
    package let sharedConnections: ConnectionCache?
    /// What owns the connections, per-host counts and threads this download uses.
    let client: FastpullClient
    /// Set when the client shuts down: the run under way, or about to start, stops.
    private let stopRequested = Mutex(false)
    /// What a probe of the URL found just before (a batch probes to name the file): the first attempt
    /// starts from it instead of asking the server again.
    private let probed: Mutex<Probed?>
    /// Set by a batch, which decided about a file at the destination before this download started;
    /// otherwise ``run()`` decides (``ExistingFile/decide(_:url:configuration:refusing:connections:client:emit:)``).
    private let existingFileDecided: Bool
    /// Set by a batch that found nothing at the destination when it decided (just before): the
    /// first run's pipeline does not look it up again.
    private let destinationSeenAbsent: Mutex<Bool>
    /// What a plan-only download found, left here when its pipeline stops after the probe.
    private let planned = Mutex<Planned?>(nil)
    private let running = Mutex<Task<Report, any Error>?>(nil)
    /// The scheduler of the segmented fetch under way, for ``completionMap(cells:)``.
    private let scheduler = Mutex<Scheduler?>(nil)

    /// How often a ``Event/Kind/progress`` event is sent while the download runs.
    static let progressInterval = ProgressMetronome.standardInterval

    /// The sequence ``events`` hands out, and whether the run it belongs to has ended.
    private struct EventChannel {
        /// Nil for a download with an observer (a batch's), whose events go to the observer only.
        var stream: AsyncStream<Event>?
        var sink: EventQueue<Event>?
        var ended = false
        /// Set by the `verified` event: the bytes are all in, so no progress event may follow it.
        var verified = false

        init(observed: Bool) {
            guard !observed else { return }
            let queue = EventQueue<Event>()
            stream = queue.stream
            sink = queue
        }
    }

    /// Prepares a download through `client`; nothing happens until ``run()``.
    public convenience init(
        from url: URL, to destination: URL, configuration: Configuration = .init(),
        client: FastpullClient = .shared
    ) {
        self.init(from: url, to: destination, configuration: configuration, observer: nil, client: client)
    }

    /// Prepares a download of one file from several servers: the first URL is the one asked for, the
    /// others join ``Configuration/Sources/mirrors``. They are mixed only when something verifies the file
    /// (a checksum, piece hashes); ``Report/sources`` says what each served.
    ///
    /// - Precondition: `sources` is not empty.
    public convenience init(
        from sources: [URL], to destination: URL, configuration: Configuration = .init(),
        client: FastpullClient = .shared
    ) {
        precondition(!sources.isEmpty, "a download needs at least one URL")
        var settings = configuration
        settings.sources.mirrors = Array(sources.dropFirst()) + configuration.sources.mirrors
        self.init(from: sources[0], to: destination, configuration: settings, observer: nil, client: client)
    }

    /// Prepares a download whose every event is also handed to `observer` (a batch gathers its
    /// downloads' events this way).
    init(
        from url: URL, to destination: URL, configuration: Configuration,
        observer: (@Sendable (Event) -> Void)?, planOnly: Bool = false, keepsProbeAnswer: Bool = false,
        sharedConnections: ConnectionCache? = nil, probed: Probed? = nil, existingFileDecided: Bool = false,
        destinationSeenAbsent: Bool = false, client: FastpullClient = .shared
    ) {
        self.existingFileDecided = existingFileDecided
        self.destinationSeenAbsent = Mutex(existingFileDecided && destinationSeenAbsent)
        self.client = client
        self.planOnly = planOnly
        self.keepsProbeAnswer = keepsProbeAnswer
        self.sharedConnections = sharedConnections
        self.probed = Mutex(probed)
        self.url = url
        self.destination = destination
        destinationPath = destination.path(percentEncoded: false)
        self.configuration = configuration
        self.observer = observer
        channel = Mutex(EventChannel(observed: observer != nil))
    }

    /// Everything the download tells while it runs, in order: ``Event/Kind/probe``,
    /// ``Event/Kind/plan``, ``Event/Kind/progress`` about once a second, retries, steals and warnings,
    /// ``Event/Kind/verified``, and last ``Event/Kind/finished`` or ``Event/Kind/failed`` — the events
    /// `fastpull --json` prints.
    ///
    /// Get it before calling ``run()``: events are kept from the moment the download is created, so
    /// nothing is missed by a consumer that starts late or reads slowly, except progress: an unread
    /// progress event gives way to a newer one (the same policy as ``Batch/events``). The sequence ends after the run's
    /// ``Event/Kind/finished`` or ``Event/Kind/failed`` event, except when the failure is
    /// ``FastpullError/Code/interrupted`` (``pause()`` or cancellation): then it goes on with the events
    /// of ``resume()``. One consumer. A download of a ``Batch`` tells its events through the batch's
    /// ``Batch/events``: its own sequence is empty.
    public var events: AsyncStream<Event> {
        channel.withLock { $0.stream } ?? AsyncStream { $0.finish() }
    }

    package func emit(_ event: Event) {
        let (told, sink) = channel.withLock { channel -> (Bool, EventQueue<Event>?) in
            switch event.detail {
            case .verified: channel.verified = true
            case .progress where channel.verified: return (false, nil)
            default: break
            }
            return (true, channel.sink)
        }
        guard told else { return }
        // A batch's download tells the batch, which tags and passes on each event: its own sequence
        // would only keep them for nobody.
        if let observer {
            observer(event)
        } else {
            sink?.yield(event, progressOf: event.kind == .progress ? 0 : nil)
        }
    }

    /// How far the download has come. Safe to read from any task while ``run()`` is going.
    public var progress: TransferProgress { counters.snapshot }

    /// Which parts of the file are in place: the file divided into `cells` equal parts, each with the
    /// fraction of its bytes written (0...1). Cheap enough to call ten times a second while the
    /// download runs; all zeros before the size is known.
    public func completionMap(cells: Int) -> [Double] {
        guard cells > 0 else { return [] }
        if let scheduler = scheduler.withLock({ $0 }) {
            return Self.completionMap(of: scheduler.snapshot(), cells: cells)
        }
        // One streaming connection fills the file from the front.
        let progress = counters.snapshot
        guard let total = progress.totalBytes, total > 0 else {
            return Array(repeating: progress.totalBytes == 0 ? 1 : 0, count: cells)
        }
        return Self.completionMap(
            of: [Segment(start: 0, end: total, written: min(progress.bytesWritten, total))], cells: cells)
    }

    /// The map of `segments` (in any order, not overlapping) in `cells` parts.
    static func completionMap(of segments: [Segment], cells: Int) -> [Double] {
        let size = segments.map(\.end).max() ?? 0
        guard size > 0, cells > 0 else { return Array(repeating: 0, count: max(cells, 0)) }
        var done = Array(repeating: Int64(0), count: cells)
        func cellStart(_ index: Int) -> Int64 {
            Int64((Double(size) * Double(index) / Double(cells)).rounded(.down))
        }
        for segment in segments where segment.written > 0 {
            let lower = segment.start
            let upper = min(segment.start + segment.written, segment.end)
            var cell = min(Int(Double(lower) / Double(size) * Double(cells)), cells - 1)
            while cell < cells, cellStart(cell) < upper {
                let start = cellStart(cell)
                let end = cell == cells - 1 ? size : cellStart(cell + 1)
                done[cell] += max(0, min(end, upper) - max(start, lower))
                cell += 1
            }
        }
        return (0..<cells).map { index in
            let start = cellStart(index)
            let end = index == cells - 1 ? size : cellStart(index + 1)
            return end > start ? min(1, Double(done[index]) / Double(end - start)) : 1
        }
    }

    /// Probes the URL and plans the download without fetching a byte or touching the destination:
    /// what `fastpull --dry-run` prints. An interrupted download of this URL at the destination, which
    /// a run would resume, is read: the plan is then what is left of it (``Event/Plan/resumedBytes``,
    /// the segments still to fetch).
    ///
    /// - Throws: ``FastpullError`` (a bad URL, or the probe's network, HTTP or TLS failure).
    public func plan() async throws(FastpullError) -> Event.Plan {
        do {
            return try await planned(at: destination).plan
        } catch let error as FastpullError {
            throw error
        } catch {
            throw Failure(error, url: url).error
        }
    }

    /// The plan and the probe's findings behind it. `keepingAnswer`: probe with the file's first GET
    /// and keep its answer unread for the download that follows (``Probed/answer``); only over
    /// ``sharedConnections``, where that download finds its connections too. The probe's events go
    /// to this download's observer.
    ///
    /// `destination`: where an interrupted download of this URL would be resumed from (its journal
    /// is read, nothing is written); the plan is then what is left of it (``Event/Plan/resumedBytes``).
    /// Nil: the destination is not looked at (its name may not be known yet).
    func planned(keepingAnswer: Bool = false, at destination: URL? = nil) async throws -> Planned {
        var settings = configuration
        settings.resume.fromJournal = true
        settings.diagnostics.traceFile = nil
        // Nothing is written, and the destination's folder need not exist yet.
        let probe = Download(
            from: url, to: destination ?? PlanPlaceholder.destination, configuration: settings,
            observer: observer,
            planOnly: true,
            keepsProbeAnswer: keepingAnswer && sharedConnections != nil, sharedConnections: sharedConnections,
            client: client)
        do {
            _ = try await client.running(url) {
                try await Pipeline(download: probe, counters: TransferCounters()).run()
            }
        } catch is PlanOnlyStop {
            guard let planned = probe.takePlanned() else {
                throw FastpullError(.internalError, "planning \(url.redactedForDisplay) left no plan")
            }
            return planned
        } catch let error as FastpullError {
            throw error
        } catch {
            throw Failure(error, url: url).error
        }
        throw FastpullError(.internalError, "planning \(url.redactedForDisplay) did not stop after the probe")
    }

    /// Leaves what the probe found (a plan-only download), and stops the pipeline.
    package func stopPlanned(_ result: Planned) -> PlanOnlyStop {
        planned.withLock { $0 = result }
        return PlanOnlyStop()
    }

    /// What this plan-only download found, once.
    func takePlanned() -> Planned? {
        planned.withLock { $0.take() }
    }

    /// The findings of the probe made just before, once (a restart probes again).
    package func takeProbed() -> Probed? {
        probed.withLock { $0.take() }
    }

    /// Probes, fetches, verifies and moves the file into place.
    ///
    /// - Throws: ``FastpullError``. On failure the output path holds nothing new.
    public func run() async throws(FastpullError) -> Report {
        channel.withLock { if $0.ended { $0 = EventChannel(observed: observer != nil) } }
        stopRequested.withLock { $0 = false }
        let ticket: Int
        do {
            ticket = try client.enter(url) { [self] in
                stopRequested.withLock { $0 = true }
                pause()
            }
        } catch {
            end(with: .failed(error), finishing: true)
            throw error
        }
        defer { client.leave(ticket) }
        // In a batch lane the run stays on the lane's thread (see ``ExecutorSet/laneThread``).
        let keptAsFound = Mutex(false)
        let task = Task(executorPreference: ExecutorSet.laneThread) { [self] in
            do {
                var replacingFound = false
                switch await decideAboutFoundFile() {
                case .keep(let report)?:
                    keptAsFound.withLock { $0 = true }
                    return report
                case .refuse(let error)?:
                    throw error
                case .fetch(let replacing, let found)?:
                    replacingFound = replacing
                    if let found { probed.withLock { $0 = found } }
                case nil:
                    break
                }
                return try await Pipeline(download: self, counters: counters, replacingFound: replacingFound)
                    .run()
            } catch let error as FastpullError {
                throw error
            } catch {
                throw Failure(error, url: url).error
            }
        }
        running.withLock { $0 = task }
        // The client shut down between ``FastpullClient/enter`` and now.
        if stopRequested.withLock({ $0 }) { task.cancel() }
        let beat = ProgressBeat(interval: ProgressMetronome.shared.interval)
        let ticker = ProgressMetronome.shared.register { [self] in report(beat) }
        stopReason.withLock { $0 = nil }
        // The lowest speed is checked on a shared clock too, not by a task of this download's own
        // that sleeps between looks (its timer woke the dispatch manager thread twice per file).
        let watch = configuration.effectiveLowestSpeed.map { floor in
            let speedWatch = SpeedWatch(floor: floor)
            let metronome = ProgressMetronome.shared(every: speedWatch.interval)
            let state = PlainMutex(speedWatch)
            return (metronome, metronome.register { [self] in checkSpeed(state, stopping: task) })
        }
        defer {
            // A run that failed before its probe (the output is a folder, another process writes the
            // `.part`) leaves the findings it was handed: an answer kept in them closes now.
            takeProbed()?.answer?.discard()
            if let (metronome, ticker) = watch { metronome.unregister(ticker) }
            ProgressMetronome.shared.unregister(ticker)
            running.withLock { $0 = nil }
            scheduler.withLock { $0 = nil }
        }
        do {
            let report = try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
            end(
                with: .finished(Event.Finished(report, alreadyPresent: keptAsFound.withLock { $0 })),
                finishing: true)
            return report
        } catch {
            var failure = (error as? FastpullError) ?? Failure(error, url: url).error
            if failure.url == nil { failure.url = url }
            // Stopped for being too slow where the pipeline had nothing to save (it says so itself when
            // it saved something).
            if failure.code == .interrupted, let reason = selfStopReason { failure = reason }
            end(with: .failed(failure), finishing: failure.code != .interrupted)
            throw failure
        }
    }

    /// What to do about a file already at the destination, where it may not simply be replaced: as
    /// the command line without `--force` and a batch do. Nil where there is nothing to decide.
    private func decideAboutFoundFile() async -> ExistingFile.Decision? {
        guard !existingFileDecided, !planOnly, !configuration.resume.replacesExistingFile,
            !FileSystem.isStandardOutput(destinationPath), FileSystem.isRegularFile(destinationPath)
        else { return nil }
        takeProbed()?.answer?.discard()
        return await ExistingFile.decide(
            destination, url: url, configuration: configuration, refusing: true,
            connections: sharedConnections ?? resources.connections(for: configuration), client: client,
            emit: { [self] in emit($0) })
    }

    /// Why the download stopped itself, if it did (the lowest speed was not kept up).
    private let stopReason = Mutex<FastpullError?>(nil)

    /// Why this run stopped itself, if it did; nil when it was stopped (if at all) by its caller.
    package var selfStopReason: FastpullError? { stopReason.withLock { $0 } }

    /// Looks at the progress once: cancels `task` when it stayed below the watch's floor for its
    /// duration.
    private func checkSpeed(_ watch: PlainMutex<SpeedWatch>, stopping task: Task<Report, any Error>) {
        guard !task.isCancelled else { return }
        let progress = counters.snapshot
        if let total = progress.totalBytes, progress.bytesWritten >= total { return }
        let hashed = scheduler.withLock { $0?.hashedBytes } ?? 0
        let fetched = counters.bytesFetched.load(ordering: .relaxed)
        let now = ContinuousClock.now
        let outputWait = counters.outputWait.total(at: now)
        let (tooSlow, floor) = watch.withLock {
            (
                $0.tooSlow(
                    progress: fetched + hashed, waiting: progress.waitingToRetry != nil,
                    outputWait: outputWait,
                    now: now),
                $0.floor
            )
        }
        guard tooSlow else { return }
        let speed = ByteFormat.speed(Double(floor.bytesPerSecond))
        stopReason.withLock {
            $0 = FastpullError(
                .network,
                "\(url.redactedForDisplay) came slower than \(speed) for \(ByteFormat.duration(floor.duration.seconds)) (the lowest speed allowed)"
            )
        }
        task.cancel()
    }

    /// Sends the run's last event and, unless it can be resumed into the same sequence, ends it.
    private func end(with event: Event, finishing: Bool) {
        emit(event)
        guard finishing else { return }
        let sink = channel.withLock { channel in
            channel.ended = true
            return channel.sink
        }
        sink?.finish()
    }

    /// Sends a ``Event/Kind/progress`` event, at a beat of the ``ProgressMetronome`` (about once a
    /// second). The speed is this run's: bytes fetched since it started (a resume's kept bytes do not
    /// count), measured from the start, so that the first event has one too.
    private func report(_ beat: ProgressBeat) {
        // A beat that started as the run ended says nothing after its last event.
        guard running.withLock({ $0 != nil }) else { return }
        let now = counters.snapshot
        guard let speed = beat.speed(bytes: counters.bytesFetched.load(ordering: .relaxed)) else { return }
        emit(
            .progress(
                Event.Progress(
                    bytes: now.bytesWritten, totalBytes: now.totalBytes, bytesPerSecond: speed,
                    connections: now.activeConnections)))
    }

    /// Called by the pipeline when the segmented fetch starts with `scheduler`.
    package func track(_ scheduler: Scheduler) {
        self.scheduler.withLock { $0 = scheduler }
    }

    /// Stops every connection and saves the journal; ``run()`` then throws an
    /// ``FastpullError/Code/interrupted`` error. Call ``resume()`` (or ``run()``) later to continue
    /// from the journal.
    public func pause() {
        running.withLock { $0 }?.cancel()
    }

    /// Continues a paused or interrupted download from its journal.
    public func resume() async throws(FastpullError) -> Report {
        try await run()
    }
}

extension Download: DownloadJob {
    package func takeDestinationSeenAbsent() -> Bool {
        destinationSeenAbsent.withLock { seen in
            defer { seen = false }
            return seen
        }
    }

    /// What the engine shares with the other downloads of this download's client.
    package var resources: EngineResources { client.resources }
}
