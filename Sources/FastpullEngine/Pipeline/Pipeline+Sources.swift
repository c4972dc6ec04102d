import FastpullHTTP
import FastpullNet
import FoundationEssentials
import Synchronization

extension Pipeline {
    /// The sources of a segmented download with mirrors: the URL asked for at once, each mirror once
    /// its probe found the same file (``whileAddingMirrors(to:size:pool:policy:executors:_:)``). Nil
    /// without mirrors, and when nothing could verify a file made of several sources' bytes (unless
    /// ``Configuration/Sources/mixesUnverified``): then only the URL asked for serves, with a warning.
    ///
    /// The mirrors are those given, then those the server named (RFC 6249 `Link: rel=duplicate`,
    /// with ``Configuration/Sources/usesLinkedMirrors``), at most ``Configuration/Limits/linkedMirrors`` of
    /// them, in the server's order of preference; the latter are used only when the file can be
    /// verified, without a word otherwise, since nobody asked for them.
    func sourceSet(for remote: RemoteFile, expectations: Expectations) -> (
        sources: SourceSet, mirrors: [URL]
    )? {
        let verifiable = !expectations.checked.isEmpty || configuration.integrity.pieceHashes != nil
        var mirrors: [URL] = []
        for url in configuration.sources.mirrors where !mirrors.contains(url) && url != download.url {
            mirrors.append(url)
        }
        if configuration.sources.usesLinkedMirrors, verifiable || configuration.sources.mixesUnverified {
            var linked: [URL] = []
            for url in remote.duplicates
            where !mirrors.contains(url) && !linked.contains(url) && url != download.url
                && url != remote.finalURL
            {
                linked.append(url)
            }
            let most = Configuration.Limits.linkedMirrors
            if linked.count > most {
                download.emit(
                    .warning(
                        "\(remote.finalURL.redactedForDisplay) names \(linked.count) mirrors; using the first \(most)"
                    ))
            }
            mirrors += linked.prefix(most)
        }
        guard !mirrors.isEmpty else { return nil }
        guard verifiable || configuration.sources.mixesUnverified else {
            download.emit(
                .warning(
                    "nothing can verify a file made of several sources' bytes (no checksum, no piece hashes), and sources that differ would give a mixed file: using only \(download.url.redactedForDisplay); give a checksum to use the \(mirrors.count) other sources"
                ))
            return nil
        }
        return (SourceSet([remote]), mirrors)
    }

    /// Runs `body` (the fetch) while the mirrors are probed, each on a thread of its own; a mirror
    /// joins the sources once its probe shows the same size with byte ranges, and is named with the
    /// reason when it does not. The probes are cancelled when `body` ends.
    ///
    /// A probe is a connection like the fetch's: no more of them run at once than the download may
    /// have connections (``Configuration/connectionLimit``), and each holds a place of its host's
    /// per-host limit (``Configuration/Connections/maximumPerHost``) while it runs, waiting for one
    /// when the fetch holds them all.
    func whileAddingMirrors<T: Sendable>(
        _ mirrors: [URL], to sources: SourceSet?, size: Int64, pool: ConnectionPool, policy: RetryPolicy,
        executors: ExecutorSet, _ body: () async throws -> T
    ) async throws -> T {
        guard let sources else { return try await body() }
        sources.expectProbes(mirrors.count)
        let atOnce = max(1, min(configuration.connectionLimit, mirrors.count))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                await withTaskGroup(of: Void.self) { probes in
                    var waiting = mirrors.enumerated().makeIterator()
                    func startNext() {
                        // Once the fetch is over, the mirrors not probed yet are left alone.
                        guard !Task.isCancelled, let (index, mirror) = waiting.next() else { return }
                        // Far from the connections' executors (numbered from 2 up).
                        let executor = executors[1_000_000 + index]
                        probes.addTask {
                            defer {
                                sources.endProbe()
                                executors.retire(1_000_000 + index)
                            }
                            await addMirror(
                                mirror, to: sources, size: size, pool: pool, policy: policy,
                                executor: executor)
                        }
                    }
                    for _ in 0..<atOnce { startNext() }
                    while await probes.next() != nil { startNext() }
                }
            }
            let result = try await body()
            group.cancelAll()
            return result
        }
    }

    /// Takes a place of the per-host limit for `url`'s host, waiting (in steps of 20 ms) for one to
    /// free; returns the host whose place the caller holds and releases. Throws when the task is
    /// cancelled first.
    func hostPlace(for url: URL) async throws -> String {
        let host = HostConnectionLimiter.key(for: url)
        let limit = max(configuration.connections.maximumPerHost, 1)
        while !download.resources.hosts.acquire(host, limit: limit) {
            try await AlarmClock.sleep(for: .milliseconds(20))
        }
        return host
    }

    private func addMirror(
        _ url: URL, to sources: SourceSet, size: Int64, pool: ConnectionPool, policy: RetryPolicy,
        executor: ThreadExecutor
    ) async {
        guard let host = try? await hostPlace(for: url) else { return }
        defer { download.resources.hosts.release(host) }
        let reason: String
        do {
            // A mirror that does not answer is not waited for long: the others serve meanwhile.
            let outcome = try await probe(
                pool: pool, policy: policy, executor: executor, url: url,
                retries: RetryBudget.mirrorProbeRetries(retries: configuration.retries.limit))
            outcome.pendingBody?.connection.close()
            var remote = outcome.remote
            remote.url = url
            if remote.size != size {
                reason = "it serves \(remote.size.map { "\($0) bytes" } ?? "no length"), not \(size) bytes"
            } else if !remote.acceptsRanges {
                reason = "it does not serve byte ranges"
            } else {
                sources.add(remote)
                return
            }
        } catch {
            if Task.isCancelled { return }
            reason = Failure(error, url: url).error.message
        }
        sources.add(
            RemoteFile(
                url: url, finalURL: url, size: nil, acceptsRanges: false, etag: nil, lastModified: nil),
            dropped: reason)
        download.emit(.sourceDropped(url: url, reason: reason))
    }

    /// What the streaming hash does with the configuration's piece hashes: a piece that does not
    /// match is blamed on the sources that sent it (one that sent it alone is dropped while another is
    /// left), and fetched again; one that fails three times ends the download.
    func pieceCheck(
        size: Int64, scheduler: Scheduler, sources: SourceSet?, map: SourceMap?
    ) throws -> PieceCheck? {
        guard let hashes = configuration.integrity.pieceHashes else { return nil }
        try hashes.validate(size: size)
        let download = download
        let counters = counters
        let fallback = download.url
        // The sources that shared a piece that failed, until it verifies.
        let suspects = SuspectList()
        var check = PieceCheck(hashes: hashes) { index, range, count, bad in
            let blamed = map?.sources(in: range) ?? []
            // Shared by several: which one sent the bad bytes shows once the piece verifies.
            if blamed.count > 1, let map { suspects.add(piece: index, bad: bad, runs: map.runs(in: range)) }
            let all = sources?.snapshot ?? []
            let urls = blamed.sorted().map { all.indices.contains($0) ? all[$0].remote.url : fallback }
            guard count < Self.pieceAttempts else {
                throw FastpullError(
                    .integrity,
                    "bytes \(range.lowerBound)-\(range.upperBound - 1) did not match their piece hash \(count) times (from \(urls.map(\.redactedForDisplay).joined(separator: ", ")))"
                )
            }
            download.emit(
                .pieceFailed(
                    offset: range.lowerBound, length: range.upperBound - range.lowerBound, sources: urls))
            for (dropped, reason) in sources?.blame(blamed, piece: range) ?? [] {
                download.emit(.sourceDropped(url: all[dropped].remote.url, reason: reason))
            }
            counters.bytesWritten.subtract(range.upperBound - range.lowerBound, ordering: .relaxed)
            scheduler.reopen(range)
        }
        check.recovered = { index, range, good in
            guard let sources, let suspect = suspects.take(piece: index), suspect.bad.count == good.count
            else {
                return
            }
            // The runs whose bytes differ from the good ones: their sources sent the bad bytes.
            var guilty: [(index: Int, range: Range<Int64>)] = []
            for run in suspect.runs {
                let lower = Int(run.range.lowerBound - range.lowerBound)
                let upper = Int(run.range.upperBound - range.lowerBound)
                guard suspect.bad[lower..<upper] != good[lower..<upper] else { continue }
                if !guilty.contains(where: { $0.index == run.source }) {
                    guilty.append((run.source, run.range))
                }
            }
            let all = sources.snapshot
            for (dropped, reason) in sources.convict(guilty) {
                download.emit(.sourceDropped(url: all[dropped].remote.url, reason: reason))
            }
        }
        return check
    }

    /// How often one piece may fail its hash before the download fails.
    static let pieceAttempts = 3

    /// What each source served, for the report, in the order given (the URL asked for first; a
    /// mirror never used last); empty for one source.
    func sourceUses(_ sources: SourceSet?) -> [Report.SourceUse] {
        guard let sources else { return [] }
        let order = [download.url] + configuration.sources.mirrors + (sources.snapshot.map(\.remote.url))
        return sources.snapshot.map {
            Report.SourceUse(url: $0.remote.url, bytes: $0.bytes, dropped: $0.dropped)
        }
        .sorted {
            (order.firstIndex(of: $0.url) ?? order.count) < (order.firstIndex(of: $1.url) ?? order.count)
        }
    }
}
