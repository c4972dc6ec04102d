import FoundationEssentials
import Glibc

/// Sleeps that wake on a thread of their own: the fetch loop's ticks, the pauses that start new
/// connections a moment apart, retry delays and the journal's interval.
///
/// `Task.sleep` on Linux arms a Dispatch timer that, when it fires, waits for a thread of Dispatch's
/// global queue of the task's priority: the queue where every other sleeping task of the process
/// wakes and goes on with its work. Where an application keeps many such tasks busy, a sleep of a
/// millisecond came back after 1.3 seconds (six hundred tests in one process), so the connections
/// of a download started that much after its first one, and its ticks came as late. Here one thread
/// waits for the earliest deadline and resumes each sleeper, which then runs on its own executor (a
/// connection's thread, the download's control thread) without queueing behind anyone's work.
package final class AlarmClock: @unchecked Sendable {
    /// The one alarm thread of the process.
    package static let shared = AlarmClock()

    /// A sleep waiting for its deadline. Its fields are read and written only with `condition` locked.
    private final class Sleeper: @unchecked Sendable {
        package let deadline: Int64
        package var continuation: UnsafeContinuation<Void, any Error>?
        package var cancelled = false

        package init(deadline: Int64) { self.deadline = deadline }
    }

    // `@unchecked Sendable`: `waiting` and `started` are read and written only with `condition` locked.
    private let condition = Condition()
    /// The sleepers, earliest deadline first.
    private var waiting: [Sleeper] = []
    private var started = false

    private init() {}

    /// Suspends the calling task for `duration` (at least), then resumes it on its executor. Throws
    /// `CancellationError` as soon as the task is cancelled, as `Task.sleep` does.
    package static func sleep(for duration: Duration) async throws {
        try await shared.sleep(for: duration)
    }

    package func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        guard duration > .zero else { return }
        let sleeper = Sleeper(deadline: Self.now() &+ Condition.nanoseconds(duration))
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                if !add(sleeper, continuation) { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            cancel(sleeper)?.resume(throwing: CancellationError())
        }
    }

    /// Queues `sleeper` with `continuation`; false when it was cancelled already.
    private func add(_ sleeper: Sleeper, _ continuation: UnsafeContinuation<Void, any Error>) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !sleeper.cancelled else { return false }
        sleeper.continuation = continuation
        let index = waiting.partitioningIndex { $0.deadline > sleeper.deadline }
        waiting.insert(sleeper, at: index)
        if !started {
            started = true
            OSThread.detach { [self] in
                ThreadExecutor.nameCurrentThread("fastpull-alarm")
                run()
            }
        } else if index == 0 {
            condition.signal()
        }
        return true
    }

    /// Marks `sleeper` cancelled and takes it out of the queue; returns its continuation to resume
    /// when it was still waiting.
    private func cancel(_ sleeper: Sleeper) -> UnsafeContinuation<Void, any Error>? {
        condition.lock()
        defer { condition.unlock() }
        sleeper.cancelled = true
        guard let continuation = sleeper.continuation else { return nil }
        sleeper.continuation = nil
        waiting.removeAll { $0 === sleeper }
        return continuation
    }

    /// The alarm thread: waits for the earliest deadline, then resumes every sleeper that is due.
    private func run() {
        condition.lock()
        while true {
            guard let first = waiting.first else {
                condition.wait()
                continue
            }
            let now = Self.now()
            guard first.deadline <= now else {
                _ = condition.wait(untilMonotonic: first.deadline)
                continue
            }
            let due = waiting.prefix { $0.deadline <= now }
            waiting.removeFirst(due.count)
            let continuations = due.compactMap { sleeper in
                defer { sleeper.continuation = nil }
                return sleeper.continuation
            }
            condition.unlock()
            for continuation in continuations { continuation.resume() }
            condition.lock()
        }
    }

    /// Nanoseconds on the monotonic clock the condition waits by.
    private static func now() -> Int64 { Condition.monotonicNow() }
}

extension Array {
    /// The first index whose element satisfies `belongsAfter`, in an array where every element that
    /// does comes after every one that does not (a binary search).
    fileprivate func partitioningIndex(where belongsAfter: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if belongsAfter(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
