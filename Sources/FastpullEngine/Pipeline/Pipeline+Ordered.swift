import FastpullHTTP
import FastpullNet
import FoundationEssentials
import Glibc

extension Pipeline {
    /// Where an output that takes bytes only in order is: standard output (`/dev/stdout`, what
    /// `fastpull -o -` asks for), or a path that holds something other than a regular file or folder —
    /// a FIFO, a device such as `/dev/null`. Such an output is written in order, never replaced.
    enum OrderedTarget: Sendable, Equatable {
        case standardOutput
        case path(String)

        /// How errors and reports call it.
        var name: String {
            switch self {
            case .standardOutput: return "standard output"
            case .path(let path): return path
            }
        }
    }

    /// The ordered output the destination is, given its kind (``FileSystem/kind(of:)``), or nil for a
    /// regular file, a folder, or none yet.
    func orderedTarget(kind: mode_t?) -> OrderedTarget? {
        if FileSystem.isStandardOutput(outputPath) { return .standardOutput }
        guard let kind else { return nil }
        return kind == S_IFREG || kind == S_IFDIR ? nil : .path(outputPath)
    }

    /// Downloads into an output that takes bytes only in order: connections fetch ranges in parallel
    /// into a bounded ring (``OrderedOutput``) that hands the file to the output in order, hashing it on
    /// the way; a server without ranges streams straight to it. Nothing is journaled or renamed; nothing
    /// can be resumed, and bytes handed over cannot be taken back, so a change of the remote file or a
    /// checksum mismatch fails the download (the exit code says so) after the output got them.
    func runOrdered(_ target: OrderedTarget, started: ContinuousClock.Instant) async throws -> Report {
        let pool = try makePool()
        defer { pool.closeAll() }
        let executors = ExecutorSet(threads: download.resources.threads)
        defer { executors.shutdown() }
        let trace = try configuration.diagnostics.traceFile.map { try TraceRecorder(path: $0) }
        let policy = RetryPolicy(
            baseDelay: configuration.retries.baseDelay,
            retriesRefused: configuration.retries.retriesRefusedConnections,
            maximumTime: configuration.retries.maximumTime)
        let (outcome, roundTrip) = try await probeAndAnnounce(
            pool: pool, policy: policy, executor: executors[0])
        let remote = outcome.remote
        // Bytes handed to the output cannot be taken back, so nothing of another source's may reach it
        // before the whole file verifies.
        if !configuration.sources.mirrors.isEmpty {
            download.emit(
                .warning(
                    "\(target.name) takes the bytes in order as they come: only \(download.url.redactedForDisplay) serves, not the \(configuration.sources.mirrors.count) other sources"
                ))
        }

        let descriptor: Int32
        do {
            descriptor = try await withTaskExecutorPreference(executors[1]) { try Self.open(target) }
        } catch {
            outcome.pendingBody?.connection.close()
            throw Failure(error, url: remote.finalURL).error
        }
        defer { if target != .standardOutput { Glibc.close(descriptor) } }

        guard remote.acceptsRanges, let size = remote.size, size > 0 else {
            return try await stream(
                outcome: outcome, pool: pool, policy: policy, executors: executors, started: started,
                ordered: SequentialOutput(
                    descriptor: descriptor, name: target.name, wait: counters.outputWait))
        }
        outcome.pendingBody?.connection.close()
        let expectations = try expectations(for: remote)
        let plan = Planner.plan(
            size: size, connections: configuration.connectionLimit,
            minimumSegmentSize: configuration.connections.minimumSegmentSize)
        let scheduler = Scheduler(segments: plan.segments, settings: schedulerSettings(roundTrip: roundTrip))
        announce(plan, remote: remote, resumedBytes: 0, scheduler: scheduler)
        let output = OrderedOutput(descriptor: descriptor, name: target.name, wait: counters.outputWait)
        // No connection is given a window past what the ring holds, from the first one on.
        scheduler.setHorizon(Int64(output.capacity))
        let digests = PrefixHasher.Digests(digestAlgorithms(for: expectations))
        let sha256: [UInt8]
        let peakConnections: Int
        let wholeFile = WholeFileHandOff()
        do {
            (sha256, peakConnections) = try await fetchSegments(
                plan: plan, remote: remote, destination: output, scheduler: scheduler, checkpointer: nil,
                hash: {
                    guard
                        let drained = try output.drain(
                            scheduler: scheduler, size: size, algorithms: digests.algorithms)
                    else { return nil }
                    digests.record(drained.digests, lastByteAt: drained.lastByteAt)
                    return drained.digests[.sha256] ?? []
                }, pool: pool, policy: policy, executors: executors, roundTrip: roundTrip,
                requestCost: outcome.requestCost, trace: trace, wholeFile: wholeFile)
        } catch let answered as WholeFileAnswered {
            guard let answer = wholeFile.take(answered.worker) else {
                throw Failure(answered, url: remote.finalURL).error
            }
            return try await streamRest(
                from: answer, requested: answered.requested, output: output, target: target,
                descriptor: descriptor, remote: remote, pool: pool, policy: policy, executors: executors,
                started: started, expectations: expectations)
        } catch {
            throw Failure(error, url: remote.finalURL).error
        }
        let lastByteAt = digests.lastByteAt ?? .now
        let verification = try verify(
            digests: digests.values ?? [:], lastByteAt: lastByteAt, size: size,
            expectedSize: size,
            expectations: expectations, file: nil)
        return Report(
            url: download.url, finalURL: remote.finalURL, outputPath: target.name, size: size,
            seconds: (ContinuousClock.now - started).seconds,
            bytesFetched: counters.bytesFetched.load(ordering: .relaxed), sha256: Digest.hex(sha256),
            verifiedChecksums: verification.verified, connections: peakConnections,
            segments: scheduler.pieceCount, retries: counters.retries.load(ordering: .relaxed),
            resumedBytes: 0,
            rangesSupported: true, digests: verification.digestsByName, checks: verification.checks,
            transferSeconds: (lastByteAt - started).seconds, hashTailSeconds: verification.hashTailSeconds)
    }

    /// Downloads the file from `answer`, a range request's answer that brought the whole file
    /// (``WholeFileAnswered``), into the ordered output: all of it when nothing reached the output
    /// yet; otherwise the rest, when the answer proves it is the version the bytes already out came
    /// from (its first bytes are read and dropped, and the digests of what went out continue).
    private func streamRest(
        from answer: (connection: HTTPConnection, head: ResponseHead), requested: ClosedRange<Int64>,
        output: OrderedOutput, target: OrderedTarget, descriptor: Int32, remote: RemoteFile,
        pool: ConnectionPool, policy: RetryPolicy, executors: ExecutorSet, started: ContinuousClock.Instant,
        expectations: Expectations
    ) async throws -> Report {
        if output.bytesHandedOver == 0 {
            // The server does not serve ranges now; nothing reached the output yet, so the whole file
            // can come from that answer.
            var single = remote
            single.acceptsRanges = false
            counters.bytesWritten.store(0, ordering: .relaxed)
            return try await stream(
                outcome: Probe.Outcome(remote: single, pendingBody: (answer.connection, answer.head)),
                pool: pool, policy: policy, executors: executors, started: started,
                ordered: SequentialOutput(
                    descriptor: descriptor, name: target.name, wait: counters.outputWait))
        }
        // Bytes went out already. When the answer proves it is the version they came from, the
        // rest of the file comes from it: its first bytes are read and dropped, the others go on
        // where the output stopped, and the digests of what went out continue with them.
        let handed = output.bytesHandedOver
        guard remote.isSameVersion(answer.head), let digests = output.takeDigestsOfHandedOver() else {
            answer.connection.close()
            throw FastpullError(
                .httpStatus,
                "\(remote.finalURL.redactedForDisplay) answered 200 with the whole file to a request for bytes \(requested.lowerBound)-\(requested.upperBound), after \(handed) bytes had gone to \(target.name), and nothing in that answer shows it is the same version; the server stopped honouring ranges: save to a file instead"
            )
        }
        download.emit(
            .warning(
                "\(remote.finalURL.redactedForDisplay) answered a range request with the whole file; the rest comes from that answer, after its first \(handed) bytes (already sent to \(target.name))"
            ))
        var single = remote
        single.acceptsRanges = false
        counters.bytesWritten.store(handed, ordering: .relaxed)
        return try await stream(
            outcome: Probe.Outcome(remote: single, pendingBody: (answer.connection, answer.head)),
            pool: pool, policy: policy, executors: executors, started: started,
            ordered: SequentialOutput(
                descriptor: descriptor, name: target.name, wait: counters.outputWait, handedOver: handed),
            expectations: expectations, resuming: StreamFetcher.Resume(offset: handed, digests: digests))
    }

    /// The descriptor of `target`, opened for writing (a FIFO's open waits for its reader: call on a
    /// thread of its own).
    private static func open(_ target: OrderedTarget) throws(StorageError) -> Int32 {
        guard case .path(let path) = target else { return STDOUT_FILENO }
        var fd: Int32
        fd = SystemCall.restarting { Glibc.open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY) }
        guard fd >= 0 else { throw StorageError(call: "open", path: path, errno: errno) }
        return fd
    }
}
