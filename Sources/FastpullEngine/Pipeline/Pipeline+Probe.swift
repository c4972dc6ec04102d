import FastpullHTTP
import FastpullNet
import FoundationEssentials

extension Pipeline {
    /// Probes the remote file and announces the plan's first facts; returns the probe's outcome and
    /// the path's round trip. A connection's setup is about one round trip (a few with TLS); the whole
    /// probe, which also waits for the server's first byte, is the fallback.
    ///
    /// `opensWithGet`: probe with the download's first GET (``Probe/opensWithGet``), unless only a
    /// plan is wanted.
    func probeAndAnnounce(
        pool: ConnectionPool, policy: RetryPolicy, executor: ThreadExecutor, opensWithGet: Bool = false
    ) async throws -> (Probe.Outcome, Duration) {
        let outcome: Probe.Outcome
        let roundTrip: Duration
        if let probed = download.takeProbed() {
            // A probe a moment ago (the batch's, to name the file) found this: no need to ask again. Its
            // answer, when it kept one, is this download's first.
            outcome = Probe.Outcome(
                remote: probed.remote, pendingBody: probed.answer?.take(), requestCost: probed.requestCost)
            roundTrip = probed.roundTrip
        } else {
            let probeStarted = ContinuousClock.now
            outcome = try await probe(
                pool: pool, policy: policy, executor: executor,
                opensWithGet: opensWithGet && (!download.planOnly || download.keepsProbeAnswer))
            roundTrip = pool.quickestConnectTime ?? (ContinuousClock.now - probeStarted)
        }
        try announce(outcome, roundTrip: roundTrip)
        if let size = outcome.remote.size { counters.totalBytes.store(size, ordering: .relaxed) }
        return (outcome, roundTrip)
    }

    /// Probes with retries for transient failures, on a connection thread.
    func probe(
        pool: ConnectionPool, policy: RetryPolicy, executor: ThreadExecutor, url: URL? = nil,
        retries: Int? = nil, opensWithGet: Bool = false
    ) async throws -> Probe.Outcome {
        let probe = Probe(
            pool: pool, maximumRedirects: configuration.request.maximumRedirects,
            allowInsecureRedirects: configuration.request.allowsInsecureRedirects, opensWithGet: opensWithGet)
        let url = url ?? download.url
        let retries = retries ?? configuration.retries.limit
        let counters = counters
        return try await withTaskExecutorPreference(executor) {
            let slot = CancellationSlot()
            return try await withTaskCancellationHandler {
                var budget = RetryBudget(retries: retries, policy: policy)
                var reached = url
                while true {
                    do {
                        return try probe.run(url, slot: slot, reached: &reached)
                    } catch {
                        // Named by the URL that answered: the end of the redirects it followed.
                        let failure = Failure(error, url: reached)
                        if slot.isCancelled { throw CancellationError() }
                        guard failure.retryable else { throw failure.error }
                        switch budget.decide(after: failure) {
                        case .now: continue
                        case .giveUp: throw failure.error
                        case .after(let delay, let attempt):
                            counters.retries.add(1, ordering: .relaxed)
                            counters.waitForRetry(
                                attempt, of: retries, reason: failure.error.message, delay: delay)
                            defer { counters.retryStarted() }
                            try await AlarmClock.sleep(for: delay)
                        }
                    }
                }
            } onCancel: {
                slot.cancel()
            }
        }
    }
}
