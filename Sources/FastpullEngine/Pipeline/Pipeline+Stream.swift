import FastpullHTTP
import FastpullNet
import FoundationEssentials

extension Pipeline {
    /// One streaming connection for a server without ranges or without a length, or for a small file
    /// whose whole body the probe's answer holds (`rangesSupported`: the server does serve ranges).
    /// Nothing to resume. The bytes go into the claimed `.part` file, or, with `ordered`, straight to
    /// an output that takes them in order.
    func stream(
        outcome: Probe.Outcome, pool: ConnectionPool, policy: RetryPolicy, executors: ExecutorSet,
        started: ContinuousClock.Instant, ordered: SequentialOutput? = nil, rangesSupported: Bool = false,
        expectations known: Expectations? = nil, trace: TraceRecorder? = nil,
        resuming: StreamFetcher.Resume? = nil
    ) async throws -> Report {
        let remote = outcome.remote
        let expectations: Expectations
        let file: OutputFile?
        do {
            // Worked out once: each working-out warns about the server digests it cannot use.
            expectations = try known ?? self.expectations(for: remote)
            if ordered == nil {
                let part = try claimedPart()
                // Each try of a stream starts at byte 0 (no system call where the `.part` is known empty).
                try part.empty()
                if let size = remote.size {
                    try part.checkRoom(for: size, empty: true)
                    // A small file is written in a moment from one answer: checking the room is enough.
                    if size > Self.largestUnjournaledFile { try part.preallocate(size: size) }
                }
                file = part
            } else {
                file = nil
            }
            let segments = remote.size.map { [Segment(start: 0, end: $0)] } ?? []
            announce(
                Plan(size: remote.size ?? 0, segments: segments, connections: 1), remote: remote,
                resumedBytes: 0, scheduler: nil)
        } catch {
            outcome.pendingBody?.connection.close()
            throw Failure(error, url: remote.finalURL).error
        }
        do {
            let destination: any ByteDestination = ordered ?? file!
            var fetcher = StreamFetcher(
                remote: remote, pool: pool, destination: destination, counters: counters,
                retries: configuration.retries.limit, policy: policy)
            fetcher.algorithms = digestAlgorithms(for: expectations)
            fetcher.document = configuration.document
            fetcher.resuming = resuming
            let pending = outcome.pendingBody
            let result: StreamFetcher.Result
            // The trace shows the one connection as it shows a segmented download's: its window is
            // the whole file, read from the probe's answer or streamed.
            trace?.record("open", connection: 0)
            let how = rangesSupported ? "whole answer" : "stream"
            if let size = remote.size {
                trace?.record(
                    "window", connection: 0, ["start": Int64(0), "end": size, "how": how, "source": 0])
            } else {
                trace?.record("window", connection: 0, ["start": Int64(0), "how": how, "source": 0])
            }
            if remote.size == 0, pending == nil {
                // The probe already knows the file is empty (HEAD said 0 bytes, or byte 0 does not
                // exist): there is nothing to ask for.
                result = StreamFetcher.Result(
                    size: 0, digests: DigestSet(fetcher.algorithms).finalize(), lastByteAt: .now)
            } else {
                // On the download's own control thread (where a download into a file already runs):
                // nothing else runs there meanwhile, and a small file takes no hop between threads.
                result = try await withTaskExecutorPreference(executors.control) { [fetcher] in
                    try await fetcher.run(pending: pending)
                }
            }
            trace?.record("close", connection: 0, ["reason": "finished"])
            let verification = try verify(
                digests: result.digests, lastByteAt: result.lastByteAt, size: result.size,
                expectedSize: remote.size, expectations: expectations, file: file)
            var placed = outputPath
            if let file {
                if let time = serverTime(remote) { file.setModificationTime(time) }
                // A part of the file (`--range`) is not the URL's file: no record says it is.
                if configuration.request.byteRange == nil {
                    file.record(
                        OriginRecord(
                            url: download.url, remote: remote, size: result.size,
                            sha256: Digest.hex(result.sha256)))
                }
                try file.sync()
                do {
                    placed = try placeVerified(file)
                } catch {
                    throw Self.unplaced(error, url: remote.finalURL)
                }
            }
            return Report(
                url: download.url, finalURL: remote.finalURL, outputPath: placed, size: result.size,
                seconds: (ContinuousClock.now - started).seconds,
                bytesFetched: counters.bytesFetched.load(ordering: .relaxed),
                sha256: Digest.hex(result.sha256), verifiedChecksums: verification.verified, connections: 1,
                segments: 1,
                retries: counters.retries.load(ordering: .relaxed), resumedBytes: 0,
                rangesSupported: rangesSupported,
                digests: verification.digestsByName, checks: verification.checks,
                transferSeconds: (result.lastByteAt - started).seconds,
                hashTailSeconds: verification.hashTailSeconds)
        } catch let unplaced as VerifiedButUnplaced {
            throw unplaced
        } catch {
            if ordered == nil, configuration.resume.restartsWhenRemoteChanges,
                let reason = Self.changeReason(error)
            {
                throw RestartRequest(reason: reason)
            }
            let failure = Failure(error, url: remote.finalURL).error
            if failure.code == .integrity, ordered == nil { discardAfterFailedVerification() }
            throw failure
        }
    }
}
