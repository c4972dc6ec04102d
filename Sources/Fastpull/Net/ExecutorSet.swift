import Synchronization

/// The threads of one download: one ``ThreadExecutor`` per connection plus one for the hasher,
/// each started the first time it is asked for.
final class ExecutorSet: Sendable {
    private let executors = Mutex<[Int: ThreadExecutor]>([:])

    subscript(index: Int) -> ThreadExecutor {
        executors.withLock { all in
            if let existing = all[index] { return existing }
            let created = ThreadExecutor(name: index < 0 ? "fastpull-ctl" : "fastpull-\(index)")
            all[index] = created
            return created
        }
    }

    /// The thread that runs a download's control loop (the fetch group and its ticks).
    var control: ThreadExecutor { self[-1] }

    /// Ends one executor's thread once its queue drains; a later request for the index starts anew.
    func retire(_ index: Int) {
        executors.withLock { $0.removeValue(forKey: index) }?.shutdown()
    }

    func shutdown() {
        let all = executors.withLock { all in
            defer { all.removeAll() }
            return Array(all.values)
        }
        for executor in all { executor.shutdown() }
    }
}
