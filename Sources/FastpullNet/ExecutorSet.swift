import Synchronization

/// The threads of one download: one ``ThreadExecutor`` per connection plus one for the hasher,
/// each started the first time it is asked for.
package final class ExecutorSet: Sendable {
    private let executors = Mutex<[Int: ThreadExecutor]>([:])
    /// The batch lane's control thread this download uses, when it has one: not shut down with the
    /// set, as the lane's next file uses it too.
    private let lane: ThreadExecutor?
    /// Where the executors' threads come from.
    private let threads: ThreadPool

    /// The control thread of the batch lane the current task fetches files in, if any: a download
    /// started there runs its control work (the probe, a small file, the fetch loop's ticks) on it
    /// rather than on a thread started for it and ended after it.
    @TaskLocal package static var laneThread: ThreadExecutor?

    package init(threads: ThreadPool = .standard) {
        self.threads = threads
        lane = Self.laneThread
        if let lane { executors.withLock { $0[-1] = lane } }
    }

    package subscript(index: Int) -> ThreadExecutor {
        executors.withLock { all in
            if let existing = all[index] { return existing }
            let created = ThreadExecutor(
                name: index < 0 ? "fastpull-ctl" : "fastpull-\(index)", threads: threads)
            all[index] = created
            return created
        }
    }

    /// The thread that runs a download's control loop (the fetch group and its ticks).
    package var control: ThreadExecutor { self[-1] }

    /// Ends one executor's thread once its queue drains; a later request for the index starts anew.
    package func retire(_ index: Int) {
        guard let retired = executors.withLock({ $0.removeValue(forKey: index) }), retired !== lane else {
            return
        }
        retired.shutdown()
    }

    package func shutdown() {
        let all = executors.withLock { all in
            defer { all.removeAll() }
            return Array(all.values)
        }
        for executor in all where executor !== lane { executor.shutdown() }
    }
}
