extension Pipeline {
    /// What each task of the fetch group ends with.
    enum GroupResult: Sendable {
        case digest([UInt8])
        case fetcherDone
        case checkpointerDone
    }

    /// Runs one fetcher per connection, the prefix hasher and the checkpointer, each on a thread of
    /// its own, and returns the file's SHA-256 once every byte is written and hashed.
    func fetchSegments(
        plan: Plan, remote: RemoteFile, file: OutputFile, scheduler: Scheduler, checkpointer: Checkpointer,
        pool: ConnectionPool, policy: RetryPolicy, executors: ExecutorSet
    ) async throws -> [UInt8] {
        let fetcher = SegmentFetcher(
            remote: remote, size: plan.size, pool: pool, file: file, scheduler: scheduler, counters: counters,
            retries: configuration.retries, policy: policy)
        let hasher = PrefixHasher(file: file, scheduler: scheduler, size: plan.size)
        let connections = scheduler.isComplete ? 0 : plan.connections
        return try await withTaskCancellationHandler {
            try await withThrowingTaskGroup(of: GroupResult.self) { group in
                group.addTask(executorPreference: executors[0]) {
                    guard let digest = try hasher.run() else { throw CancellationError() }
                    return .digest(digest)
                }
                group.addTask(executorPreference: executors[connections + 1]) {
                    try await checkpointer.run()
                    return .checkpointerDone
                }
                for index in 0..<connections {
                    group.addTask(executorPreference: executors[index + 1]) {
                        try await fetcher.run()
                        return .fetcherDone
                    }
                }
                var digest: [UInt8]?
                var running = connections + 1
                do {
                    for try await result in group {
                        switch result {
                        case .digest(let value):
                            digest = value
                            running -= 1
                        case .fetcherDone:
                            running -= 1
                        case .checkpointerDone:
                            break
                        }
                        // Everything is fetched and hashed: the checkpointer can stop.
                        if running == 0 { group.cancelAll() }
                    }
                } catch {
                    scheduler.stop()
                    throw error
                }
                guard let digest else { throw CancellationError() }
                return digest
            }
        } onCancel: {
            scheduler.stop()
        }
    }
}
