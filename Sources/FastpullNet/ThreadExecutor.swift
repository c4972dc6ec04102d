import CLinux
import FoundationEssentials
import Glibc

/// A `TaskExecutor` that owns one thread; blocking socket I/O runs there, never on the cooperative pool.
///
/// Used as `group.addTask(executorPreference: executor) { ... }`: the task's synchronous stretches run
/// on this executor's thread, so a blocking `recv` stalls only that thread. `shutdown()` releases the
/// thread once the queue is drained (to its ``ThreadPool``, where the next executor may take it up); the
/// executor keeps itself alive until then, so every executor must be shut down. Jobs that arrive after
/// that are handed to the global concurrent executor rather than lost (never to the thread's next
/// executor: each has a queue of its own).
package final class ThreadExecutor: TaskExecutor {
    private let queue = JobQueue()
    /// The thread's name (at most 15 bytes are kept), shown by debuggers, `top -H` and `ps -L`.
    package let name: String

    /// Starts the thread named `name` in `threads` (a parked one where there is one).
    package init(name: String, threads: ThreadPool = .standard) {
        self.name = name
        threads.run { [self] in run() }
    }

    /// Queues `job` to run on this executor's thread.
    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if !queue.push(job) {
            globalConcurrentExecutor.enqueue(job)
        }
    }

    /// Lets the thread exit once every queued job has run. Idempotent.
    package func shutdown() {
        queue.shutDown()
    }

    /// Blocks until the thread has exited (after `shutdown()`). Never call it on the executor's thread.
    package func waitUntilFinished() {
        queue.waitUntilFinished()
    }

    private func run() {
        ThreadExecutor.nameCurrentThread(name)
        let executor = asUnownedTaskExecutor()
        while let batch = queue.takeAll() {
            for job in batch {
                job.runSynchronously(on: executor)
            }
        }
    }
}

extension ThreadExecutor {
    /// Names the calling thread (`prctl(PR_SET_NAME)`, at most 15 bytes). (Foundation's `Thread.name`
    /// reaches the kernel only sometimes on Linux, racing with `start()`; unnamed threads inherit their
    /// creator's name.)
    package static func nameCurrentThread(_ name: String) {
        _ = fp_name_thread(String(decoding: name.utf8.prefix(15), as: UTF8.self))
    }
}

/// The job queue of a ``ThreadExecutor``: a FIFO guarded by a condition.
///
/// `@unchecked Sendable` is sound because every stored `var` is read and written only while `condition`
/// is locked (each method locks it on entry and unlocks it on every exit path), and `condition` itself is
/// a thread-safe lock.
private final class JobQueue: @unchecked Sendable {
    private let condition = Condition()
    private var jobs: [UnownedJob] = []
    private var isShutDown = false
    private var isFinished = false

    /// Appends `job`; false if the consuming thread has already exited.
    package func push(_ job: UnownedJob) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !isFinished else { return false }
        jobs.append(job)
        condition.signal()
        return true
    }

    /// Waits for jobs and returns all of them in order; nil once shut down and empty (the thread must
    /// then exit: later pushes are refused).
    package func takeAll() -> [UnownedJob]? {
        condition.lock()
        defer { condition.unlock() }
        while jobs.isEmpty && !isShutDown {
            condition.wait()
        }
        guard !jobs.isEmpty else {
            isFinished = true
            condition.broadcast()
            return nil
        }
        defer { jobs.removeAll(keepingCapacity: true) }
        return jobs
    }

    package func shutDown() {
        condition.lock()
        defer { condition.unlock() }
        isShutDown = true
        condition.broadcast()
    }

    package func waitUntilFinished() {
        condition.lock()
        defer { condition.unlock() }
        while !isFinished {
            condition.wait()
        }
    }
}
