import FastpullHTTP
import FastpullNet
import FoundationEssentials
import Glibc

/// The steps of one download, in order: validate, probe, resume or plan, fetch (with the streaming
/// hash and the journal), verify, and move into place.
package struct Pipeline {
    let download: any DownloadJob
    let counters: TransferCounters

    /// How the download runs: its configuration, but replacing the file at the destination when
    /// `replacingFound` (a file a run saved earlier, whose server now offers another version).
    let configuration: Configuration

    package init(download: any DownloadJob, counters: TransferCounters, replacingFound: Bool = false) {
        self.download = download
        self.counters = counters
        var configuration = download.configuration
        if replacingFound {
            configuration.resume.replacesExistingFile = true
            configuration.resume.adoptsPartialFile = false
        }
        self.configuration = configuration
    }

    var outputPath: String { download.destinationPath }
    var partPath: String { outputPath + ".part" }
    var store: JournalStore { JournalStore(partPath: partPath) }

    /// How many times a download starts over because the remote file changed under it.
    static let maximumRestarts = 2

    /// Files up to this size are not journaled: one that stops is fetched again from its start.
    static let largestUnjournaledFile: Int64 = 1 << 20

    /// Raised inside an attempt when the remote file changed and starting over is allowed.
    struct RestartRequest: Error {
        var reason: String
    }

    /// Raised inside an attempt when a file made of several sources' bytes failed its checksum, with
    /// no piece hashes to tell which: the next attempt fetches it from the URL asked for alone.
    struct MixedSourcesFailed: Error {
        var failure: FastpullError
        var sources: Int
    }

    /// The claimed and locked `.part` file (nil until ``run()`` claims it, and for a plan-only run).
    private(set) var part: OutputFile?
    /// The host whose per-host place this download holds from before its probe to its end (see
    /// ``DownloadPlaces``); nil until ``run()`` takes it.
    private(set) var ownPlace: String?

    package func run() async throws -> Report {
        let started = ContinuousClock.now
        counters.bytesFetched.store(0, ordering: .relaxed)
        counters.retries.store(0, ordering: .relaxed)
        let ordered = try validate()
        // The download's first connection (the probe's, then the first fetch's) counts against the
        // per-host limit from the start: waiting here for a place, not opening one more.
        let host = try await hostPlace(for: download.url)
        defer { download.resources.hosts.release(host) }
        var placed = self
        placed.ownPlace = host
        return try await placed.runPlaced(ordered, started: started)
    }

    private func runPlaced(_ ordered: OrderedTarget?, started: ContinuousClock.Instant) async throws -> Report
    {
        if !download.planOnly, let target = ordered {
            do {
                return try await runOrdered(target, started: started)
            } catch let error as FastpullError {
                throw error
            } catch {
                throw Failure(error, url: download.url).error
            }
        }
        var claimed = self
        if !download.planOnly {
            do {
                claimed.part = try OutputFile(claiming: partPath)
            } catch {
                throw missingFolder(after: error) ?? Failure(error, url: download.url).error
            }
        }
        do {
            return try await claimed.runClaimed(started: started)
        } catch let unplaced as VerifiedButUnplaced {
            // The `.part` holds the verified file, as the error says: it stays, journal or not.
            throw unplaced.error
        } catch {
            claimed.removeUnresumable(after: error)
            throw error
        }
    }

    /// The error of a `.part` that could not be created because its folder is not there, or nil when
    /// `error` says something else.
    private func missingFolder(after error: any Error) -> FastpullError? {
        guard case .io(let failure) = error as? ClaimError, failure.errno == ENOENT else { return nil }
        let folder = FileSystem.split(outputPath).folder
        guard !FileSystem.isDirectory(folder) else { return nil }
        return FastpullError(
            .localIO, "the folder \(folder) does not exist; create it or choose another output path")
    }

    /// What a failure to give the verified file its name throws: the file stays in its `.part` when
    /// something appeared at the name (the error says so).
    static func unplaced(_ error: any Error, url: URL) -> any Error {
        let failure = Failure(error, url: url).error
        guard case .appeared = error as? PlacementError else { return failure }
        return VerifiedButUnplaced(error: failure)
    }

    /// The file was verified, but could not take its name (something appeared there): its `.part`
    /// stays, whether or not a journal makes it resumable.
    struct VerifiedButUnplaced: Error {
        var error: FastpullError
    }

    /// The `.part` file this run claimed.
    func claimedPart() throws -> OutputFile {
        guard let part else {
            throw FastpullError(.internalError, "\(partPath) was used before it was claimed")
        }
        return part
    }

    /// The run once the `.part` file is ours.
    /// The time the saved file takes from the server (``Configuration/Resume/keepsServerTime``), in
    /// seconds since 1970: its `Last-Modified`, when asked for and given. Set before the origin
    /// record, which records the file's time as it is then.
    func serverTime(_ remote: RemoteFile) -> Int64? {
        guard configuration.resume.keepsServerTime, let text = remote.lastModified,
            let date = HTTPDate.parse(text)
        else { return nil }
        return Int64(date.timeIntervalSince1970)
    }

    /// The connections of this download: its TLS settings, timeouts, header fields, proxies and rate.
    func makePool() throws -> ConnectionPool {
        let tls = configuration.tls.options
        let timeouts = Timeouts(connect: configuration.timeouts.connect, idle: configuration.timeouts.idle)
        let addressing = configuration.request.addressing
        return ConnectionPool(
            tlsOptions: tls, timeouts: timeouts,
            settings: try RequestSettings(configuration: configuration, url: download.url),
            proxies: try ProxyRules(
                configuration.request.proxy, environment: ProxyRules.environmentVariables),
            limiter: try RateLimiter.make(
                configuration.connections.maximumBytesPerSecond, overall: download.resources.overallLimit),
            shared: download.sharedConnections
                ?? download.resources.connections(for: configuration),
            census: download.resources.census, addressing: addressing,
            window: configuration.request.byteRange?.window, cookies: configuration.request.cookies?.store,
            onExchange: exchangeObserver)
    }

    /// With ``Configuration/Diagnostics/verbose``, what sends every request and response head as an event.
    private var exchangeObserver: (@Sendable (RequestHead, ResponseHead) -> Void)? {
        guard configuration.diagnostics.verbose else { return nil }
        let download = download
        return { request, response in
            let exchange = Event.Exchange(
                request: ExchangeLog.lines(request: request), response: ExchangeLog.lines(response: response))
            download.emit(.exchange(exchange))
        }
    }

    private func runClaimed(started: ContinuousClock.Instant) async throws -> Report {
        let pool = try makePool()
        defer { pool.closeAll() }
        let executors = ExecutorSet(threads: download.resources.threads)
        defer { executors.shutdown() }
        let trace = try configuration.diagnostics.traceFile.map { try TraceRecorder(path: $0) }

        // The steps between the fetches block on the disk (preallocation, the journal's fsync, the final
        // sync and rename), which can take seconds on a busy disk: they run on the download's own control
        // thread, never on Swift's few cooperative threads that every other task shares.
        return try await withTaskExecutorPreference(executors.control) {
            if !configuration.resume.fromJournal { try discardProgress() }
            var restarts = 0
            var oneSource = false
            while true {
                do {
                    return try await attempt(
                        pool: pool, executors: executors, trace: trace, started: started, oneSource: oneSource
                    )
                } catch let mixed as MixedSourcesFailed where !oneSource {
                    oneSource = true
                    download.emit(
                        .warning(
                            "the file made of \(mixed.sources) sources' bytes failed its check (\(mixed.failure.message)); fetching it again from \(download.url.redactedForDisplay) alone"
                        ))
                    try discardProgress()
                    counters.bytesWritten.store(0, ordering: .relaxed)
                } catch let request as RestartRequest where restarts < Self.maximumRestarts {
                    restarts += 1
                    download.emit(.restarting(reason: request.reason))
                    try discardProgress()
                    counters.bytesWritten.store(0, ordering: .relaxed)
                } catch let request as RestartRequest {
                    try? discardProgress()
                    throw FastpullError(
                        .remoteChanged,
                        "\(download.url.redactedForDisplay) kept changing during the download (\(request.reason)); try again later"
                    )
                }
            }
        }
    }

    /// Forgets all progress: removes the journals and empties the `.part` file, which stays claimed.
    func discardProgress() throws {
        do {
            try store.remove()
            try part?.truncate(to: 0)
        } catch {
            throw Failure(error, url: download.url).error
        }
    }

    /// After a failed run: the `.part` file goes unless a durable journal makes it resumable. A file
    /// that saved nothing is no help to anyone, and without a journal its bytes cannot be trusted.
    private func removeUnresumable(after error: any Error) {
        guard part != nil, !FileSystem.exists(store.durablePath) else { return }
        // --keep-partial: the bytes that failed verification stay for inspection.
        if configuration.integrity.keepsPartialOnMismatch, (error as? FastpullError)?.code == .integrity {
            return
        }
        try? store.remove()
        try? FileSystem.remove(partPath)
    }

    private func attempt(
        pool: ConnectionPool, executors: ExecutorSet, trace: TraceRecorder?, started: ContinuousClock.Instant,
        oneSource: Bool
    ) async throws -> Report {
        let policy = RetryPolicy(
            baseDelay: configuration.retries.baseDelay,
            retriesRefused: configuration.retries.retriesRefusedConnections,
            maximumTime: configuration.retries.maximumTime)
        // A plan's placeholder destination has no journal to look for.
        let journaled = !download.planOnly && store.exists
        // Another program's partial file to continue: the probe asks with HEAD (an opening GET would
        // bring bytes the file has).
        let adoptable = adoptableLength()
        let (outcome, roundTrip) = try await probeAndAnnounce(
            pool: pool, policy: policy, executor: executors.control,
            opensWithGet: opensWithGet(journaled: journaled || adoptable != nil))
        let remote = outcome.remote
        // A document over its limit goes no further: not a byte of its body is read.
        if let document = configuration.document, let size = remote.size, size > document.limit {
            outcome.pendingBody?.connection.close()
            throw document.tooLarge(download.url, declared: size)
        }
        if let maximum = configuration.integrity.maximumSize, let size = remote.size, size > maximum {
            outcome.pendingBody?.connection.close()
            throw FastpullError(
                .integrity,
                "\(remote.finalURL.redactedForDisplay) is \(ByteFormat.size(size)) (\(size) bytes), more than the \(ByteFormat.size(maximum)) (\(maximum) bytes) allowed; nothing was downloaded"
            )
        }
        // The probe's 206, unread: the first connection's answer.
        let opening = outcome.pendingBody.flatMap { OpeningAnswer(connection: $0.connection, head: $0.head) }
        defer { opening?.discard() }

        guard remote.acceptsRanges, let size = remote.size, size > 0 else {
            if adoptable != nil {
                throw FastpullError(
                    .localIO,
                    "\(outputPath) cannot be continued: \(remote.finalURL.redactedForDisplay) does not offer byte ranges; it is left as it is",
                    remedy: .replaceExisting)
            }
            if journaled {
                download.emit(
                    .warning("the server does not offer byte ranges now; the earlier progress is discarded"))
                try discardProgress()
            }
            return try await stream(
                outcome: outcome, pool: pool, policy: policy, executors: executors, started: started,
                trace: trace)
        }
        if opening == nil { outcome.pendingBody?.connection.close() }
        let expectations = try expectations(for: remote)
        if let expected = configuration.integrity.expectedSize, expected != size {
            throw FastpullError(
                .integrity,
                "\(remote.finalURL.redactedForDisplay) serves \(size) bytes, but the file is \(expected) bytes"
            )
        }
        let sourcing = oneSource ? nil : sourceSet(for: remote, expectations: expectations)
        let sources = sourcing?.sources
        // The probe found mirrors (Link: rel=duplicate): the bytes are spread over sources from the
        // start, and an answer nobody reads would hold the origin's connection (and, on a server that
        // answers one request at a time, every request behind it).
        if sources != nil { opening?.discard() }
        // A small file whose whole body is in the probe's answer is read from that answer on one
        // connection, hashed as it passes: one request, as with the scheduler, but without its
        // threads, its hasher, its controller or a journal (a file this small is not journaled).
        if sources == nil, configuration.integrity.pieceHashes == nil, size <= Self.largestUnjournaledFile,
            !journaled, let opening, opening.end == size, let answer = opening.take()
        {
            return try await stream(
                outcome: Probe.Outcome(remote: remote, pendingBody: (answer.connection, answer.head)),
                pool: pool, policy: policy, executors: executors, started: started, rangesSupported: true,
                expectations: expectations, trace: trace)
        }

        if let adoptable {
            try await proveAdoptable(
                length: adoptable, remote: remote, size: size, pool: pool, executor: executors.control)
        }
        let start = try resumeOrCreate(remote: remote, size: size, adopting: adoptable)
        let plan = Plan(
            size: size, segments: start.segments,
            connections: min(
                configuration.connectionLimit, max(start.segments.filter { !$0.isComplete }.count, 1)))
        var settings = schedulerSettings(roundTrip: roundTrip)
        // What a connection carried in the run before, from one source (with several, each has its
        // own speed, and the controller does not start from memory either).
        settings.priorRate = sources == nil ? start.link?.bytesPerSecondPerConnection ?? 0 : 0
        let scheduler = Scheduler(segments: plan.segments, settings: settings)
        announce(plan, remote: remote, resumedBytes: start.keptBytes, scheduler: scheduler)
        let link = LinkMemoryCell(start.link)
        // A small file is fetched again after a crash rather than journaled: the journal's syncs would
        // cost more than the fetch.
        let checkpointer =
            size <= Self.largestUnjournaledFile && start.keptBytes == 0
            ? nil
            : Checkpointer(
                store: store, template: start.journal, scheduler: scheduler, file: start.file, link: link)

        let sha256: [UInt8]
        let peakConnections: Int
        // The prefix hasher computes every algorithm the expectations need.
        let digests = PrefixHasher.Digests(digestAlgorithms(for: expectations))
        let map = sources != nil || configuration.integrity.pieceHashes != nil ? SourceMap() : nil
        let wholeFile = WholeFileHandOff()
        do {
            try checkpointer?.checkpoint(durably: true)
            var hasher = PrefixHasher(
                file: start.file, scheduler: scheduler, size: plan.size, digests: digests)
            hasher.pieces = try pieceCheck(size: size, scheduler: scheduler, sources: sources, map: map)
            let fetchHasher = hasher
            (sha256, peakConnections) = try await whileAddingMirrors(
                sourcing?.mirrors ?? [], to: sources, size: size, pool: pool, policy: policy,
                executors: executors
            ) {
                try await fetchSegments(
                    plan: plan, remote: remote, destination: start.file, scheduler: scheduler,
                    checkpointer: checkpointer, hash: { try fetchHasher.run() }, pool: pool, policy: policy,
                    executors: executors, roundTrip: roundTrip, requestCost: outcome.requestCost,
                    trace: trace, sources: sources, map: map, mirrors: sourcing?.mirrors.count,
                    opening: sources == nil ? opening : nil, link: link, wholeFile: wholeFile)
            }
        } catch let answered as WholeFileAnswered {
            guard let answer = wholeFile.take(answered.worker) else {
                throw stopped(by: answered, remote: remote, checkpointer: checkpointer)
            }
            // A range answered with the whole file of this version: the server does not serve ranges
            // now. That body is the file; everything else written so far is dropped for it.
            try discardProgress()
            counters.bytesWritten.store(0, ordering: .relaxed)
            download.emit(
                .warning(
                    "\(remote.finalURL.redactedForDisplay) answered a range request with the whole file; downloading it over one connection"
                ))
            var single = remote
            single.acceptsRanges = false
            return try await stream(
                outcome: Probe.Outcome(remote: single, pendingBody: (answer.connection, answer.head)),
                pool: pool, policy: policy, executors: executors, started: started, trace: trace)
        } catch {
            throw stopped(by: error, remote: remote, checkpointer: checkpointer)
        }

        let lastByteAt = digests.lastByteAt ?? .now
        let verification: Verification
        do {
            verification = try verify(
                digests: digests.values ?? [:], lastByteAt: lastByteAt, size: size,
                expectedSize: size, expectations: expectations, file: start.file)
        } catch {
            let failure = Failure(error, url: remote.finalURL).error
            let contributing = sources?.snapshot.count { $0.bytes > 0 } ?? 0
            if contributing > 1, failure.code == .integrity {
                throw MixedSourcesFailed(failure: failure, sources: contributing)
            }
            discardAfterFailedVerification()
            throw failure
        }
        var placed = outputPath
        do {
            if let time = serverTime(remote) { start.file.setModificationTime(time) }
            // A part of the file (`--range`) is not the URL's file: no record says it is.
            if configuration.request.byteRange == nil {
                start.file.record(
                    OriginRecord(url: download.url, remote: remote, size: size, sha256: Digest.hex(sha256)))
            }
            try start.file.sync()
            placed = try placeVerified(start.file)
            try? store.remove()
        } catch {
            // The file is verified; whatever kept it from its name, a later run finds it complete.
            try? checkpointer?.checkpoint(durably: true)
            throw Self.unplaced(error, url: remote.finalURL)
        }
        return Report(
            url: download.url, finalURL: remote.finalURL, outputPath: placed, size: size,
            seconds: (ContinuousClock.now - started).seconds,
            bytesFetched: counters.bytesFetched.load(ordering: .relaxed), sha256: Digest.hex(sha256),
            verifiedChecksums: verification.verified, connections: peakConnections,
            segments: scheduler.pieceCount,
            retries: counters.retries.load(ordering: .relaxed), resumedBytes: start.keptBytes,
            rangesSupported: true, digests: verification.digestsByName, checks: verification.checks,
            transferSeconds: (lastByteAt - started).seconds, hashTailSeconds: verification.hashTailSeconds,
            sources: sourceUses(sources))
    }

    /// Whether this attempt probes with its first GET (``Probe/opensWithGet``): a download from
    /// nothing, from one source, whose checks need nothing the probe must tell first. Not one that
    /// resumes (its bytes start elsewhere), one with mirrors or piece hashes (the bytes are spread over
    /// sources from the start), one matched in a checksum file by the name the probe finds, or one with
    /// a malformed checksum (that fails before any request).
    private func opensWithGet(journaled: Bool) -> Bool {
        !journaled && configuration.sources.mirrors.isEmpty && configuration.integrity.pieceHashes == nil
            && configuration.integrity.checksumFiles.isEmpty
            && configuration.knownChecksums.allSatisfy { $0.checksum.expectedBytes != nil }
    }

    /// How the scheduler of this download decides, for a link whose round trip is about `roundTrip`.
    func schedulerSettings(roundTrip: Duration) -> SegmentTable.Settings {
        var settings = SegmentTable.Settings()
        settings.stallTimeout = configuration.timeouts.stall
        // Speeds sampled every 0.1 s, and a far slower connection replaced after twelve round trips
        // (0.3–2 s): soon enough to matter in a download of seconds, long enough for TCP's slow start.
        settings.rateSample = .milliseconds(100)
        settings.slowGrace = min(max(roundTrip * 12, .milliseconds(300)), .seconds(2))
        settings.roundTrip = roundTrip
        settings.minimumSplit = max(configuration.connections.minimumSegmentSize, 1)
        switch configuration.connections.pipelining {
        case .automatic: break
        case .always: settings.aheadMinimumRoundTrip = 0
        case .never: settings.requestsAhead = false
        }
        // All connections together write at most about 128 MiB ahead of the hashed prefix.
        settings.maximumMergedPiece = max(4 << 20, (128 << 20) / Int64(configuration.connectionLimit))
        settings.expectedConnections = configuration.connectionLimit
        return settings
    }

    /// Turns a failure of the segmented fetch into what the caller sees, saving the journal first
    /// whenever the work can be resumed.
    private func stopped(by error: any Error, remote: RemoteFile, checkpointer: Checkpointer?) -> any Error {
        if let reason = Self.changeReason(error) {
            if configuration.resume.restartsWhenRemoteChanges { return RestartRequest(reason: reason) }
            try? discardProgress()
            return Failure(error, url: remote.finalURL).error
        }
        let failure = Failure(error, url: remote.finalURL).error
        guard failure.code != .integrity else {
            try? discardProgress()
            return failure
        }
        // Without a journal (a small file) nothing can be resumed.
        guard let checkpointer else {
            try? discardProgress()
            return failure
        }
        // Nothing saved: the .part only holds space the user needs back, and there is nothing to resume.
        let nothingSaved = { checkpointer.savedBytes == 0 }
        do {
            try checkpointer.checkpoint(durably: true)
        } catch {
            // Without a journal the .part can never be resumed: leave nothing rather than a trap.
            if !FileSystem.exists(store.durablePath) || nothingSaved() {
                try? discardProgress()
                return failure
            }
            let saved = "\(error)"
            let detail = failure.message.contains(saved) ? "" : "; the journal could not be updated: \(saved)"
            return failure.with(message: "\(failure.message)\(detail)")
        }
        let kept = checkpointer.savedBytes
        let total = remote.size ?? 0
        if nothingSaved() {
            try? discardProgress()
            return failure
        }
        let saved = "\(ByteFormat.size(kept)) of \(ByteFormat.size(total)) saved in \(partPath)"
        if failure.code == .interrupted {
            // Stopped by the download itself (too slow), not by its caller: that reason, with the same news.
            if let reason = download.selfStopReason {
                return reason.with(message: "\(reason.message); \(saved)").with(remedy: .resume)
            }
            return FastpullError(.interrupted, "interrupted with \(saved)", remedy: .resume)
        }
        return failure.with(message: "\(failure.message) (\(saved))").with(remedy: failure.remedy ?? .resume)
    }

    /// Checks the settings and the destination; returns the ordered output the destination is, if
    /// it is one (the destination is looked up once).
    private func validate() throws -> OrderedTarget? {
        if case .fixed(let count) = configuration.connections.count, !(1...128).contains(count) {
            throw FastpullError(.usage, "connections must be between 1 and 128, got \(count)")
        }
        guard (1...128).contains(configuration.connections.maximum) else {
            throw FastpullError(
                .usage,
                "the maximum number of connections must be between 1 and 128, got \(configuration.connections.maximum)"
            )
        }
        guard configuration.connections.minimumSegmentSize >= 1 else {
            throw FastpullError(.usage, "the minimum segment size must be at least 1 byte")
        }
        guard configuration.retries.limit >= 0 else {
            throw FastpullError(.usage, "retries cannot be negative, got \(configuration.retries.limit)")
        }
        guard Origin(download.url) != nil else {
            throw FastpullError(
                .usage,
                "unsupported URL '\(download.url.redactedForDisplay)': expected http:// or https:// with a host"
            )
        }
        guard download.destination.isFileURL else {
            throw FastpullError(.usage, "the destination must be a file URL, got \(download.destination)")
        }
        // A plan writes nothing: its destination is a placeholder, not looked at.
        if download.planOnly { return nil }
        // An output that takes bytes in order (standard output, a FIFO, a device) is opened, not created.
        // Where the caller looked just before and found nothing, nothing is looked up again: whatever
        // appears there since is not replaced (``placeVerified(_:)``, as for a name taken during the
        // download). A missing folder is told when the `.part` cannot be created.
        let output = download.takeDestinationSeenAbsent() ? nil : FileSystem.kind(of: outputPath)
        if let ordered = orderedTarget(kind: output) { return ordered }
        let (folder, name) = FileSystem.split(outputPath)
        guard output != S_IFDIR else {
            throw FastpullError(.localIO, "\(outputPath) is a folder; give a file name to write to")
        }
        let suffix = JournalStore.longestSuffix.utf8.count
        // No writable file system in use allows fewer than 143 bytes (eCryptfs): a shorter name needs no
        // look at the folder's limit.
        let room = name.utf8.count + suffix <= 143 ? 143 : FileSystem.maximumNameLength(in: folder)
        guard name.utf8.count + suffix <= room else {
            throw FastpullError(
                .usage,
                "the file name of \(outputPath) is \(name.utf8.count) bytes long, but its folder allows \(room) and the files kept beside it while it downloads add \(suffix); choose a name of at most \(room - suffix) bytes"
            )
        }
        return nil
    }
}

extension Pipeline {
    /// Why `error` says the remote file changed under the download, or nil when it says something else.
    static func changeReason(_ error: any Error) -> String? {
        switch error {
        case TransferError.remoteChanged(let reason): return reason
        case TransferError.sizeChanged(let expected, let got):
            return "its size changed from \(expected) to \(got) bytes"
        default: return nil
        }
    }
}
