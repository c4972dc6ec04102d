import FoundationEssentials
import Synchronization

/// The threads a client runs blocking work on (connections, control loops, hashing), kept for a
/// while after their work ended so that the next piece of work starts on one of them instead of a
/// new thread: a batch of small files otherwise starts and ends several threads per file (each
/// `clone`, stack `mmap` and `munmap`, name and signal mask), which cost more CPU than fetching the
/// file.
///
/// A parked thread waits ``idleTime`` for new work, then ends; at most ``limit`` wait at once. After
/// ``close()`` no thread parks: each ends once its work is done, and ``waitUntilEmpty()`` returns
/// when the last has.
package final class ThreadPool: Sendable {
    /// The pool of the shared `FastpullClient`, and of executors made outside any client (tests).
    package static let standard = ThreadPool()

    package let idleTime: TimeInterval
    package let limit: Int

    private struct State {
        package var parked: [Slot] = []
        /// Threads started and not yet ended: running work or parked.
        package var live = 0
        /// Threads ever started, for tests and the client's accounting.
        package var started = 0
        package var closed = false
        package var emptyWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = PlainMutex(State())

    package init(idleTime: TimeInterval = 2, limit: Int = 32) {
        self.idleTime = idleTime
        self.limit = limit
    }

    /// Runs `work` on a parked thread, or on a new one when none waits.
    package func run(_ work: @escaping @Sendable () -> Void) {
        let slot = state.withLock { state -> Slot? in
            if let slot = state.parked.popLast() { return slot }
            state.live += 1
            state.started += 1
            return nil
        }
        if let slot {
            slot.hand(work)
            return
        }
        OSThread.detach { [self] in
            let slot = Slot()
            var next: (@Sendable () -> Void)? = work
            while let work = next {
                work()
                next = park(slot)
            }
            let waiters = state.withLock { state in
                state.live -= 1
                guard state.live == 0 else { return [CheckedContinuation<Void, Never>]() }
                defer { state.emptyWaiters.removeAll() }
                return state.emptyWaiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// How many threads wait for work now.
    package var parkedCount: Int { state.withLock { $0.parked.count } }
    /// How many threads are alive now: running work or parked.
    package var liveCount: Int { state.withLock { $0.live } }
    /// How many threads the pool has started since it was made.
    package var startedCount: Int { state.withLock { $0.started } }

    /// Ends every parked thread and lets no thread park from now on; work handed over later still
    /// runs, on a thread that ends after it.
    package func close() {
        let parked = state.withLock { state in
            state.closed = true
            defer { state.parked.removeAll() }
            return state.parked
        }
        for slot in parked { slot.hand(nil) }
    }

    /// Returns once no thread of the pool is alive (after ``close()``, once running work has ended).
    package func waitUntilEmpty() async {
        await withCheckedContinuation { continuation in
            let empty = state.withLock { state in
                guard state.live > 0 else { return true }
                state.emptyWaiters.append(continuation)
                return false
            }
            if empty { continuation.resume() }
        }
    }

    /// One parked thread's mailbox. `@unchecked Sendable`: `work` and `handed` are read and written
    /// only while `condition` is locked.
    private final class Slot: @unchecked Sendable {
        package let condition = Condition()
        package var work: (@Sendable () -> Void)?
        /// Whether the slot was handed something: work, or nil to end the thread.
        package var handed = false

        package func hand(_ work: (@Sendable () -> Void)?) {
            condition.lock()
            self.work = work
            handed = true
            condition.signal()
            condition.unlock()
        }
    }

    /// Waits on `slot` for new work; nil when none came in time or the pool closed (the thread then
    /// ends).
    private func park(_ slot: Slot) -> (@Sendable () -> Void)? {
        let admitted = state.withLock { state in
            guard !state.closed, state.parked.count < limit else { return false }
            state.parked.append(slot)
            return true
        }
        guard admitted else { return nil }
        let deadline = ContinuousClock.now + .seconds(idleTime)
        slot.condition.lock()
        defer { slot.condition.unlock() }
        while !slot.handed {
            if !slot.condition.wait(until: deadline) {
                // Time is up; unless a taker has just popped this slot (its work is then on the way),
                // leave the list and end.
                let left = state.withLock { state in
                    guard let index = state.parked.firstIndex(where: { $0 === slot }) else { return false }
                    state.parked.remove(at: index)
                    return true
                }
                if left { return nil }
                while !slot.handed { slot.condition.wait() }
            }
        }
        defer {
            slot.work = nil
            slot.handed = false
        }
        return slot.work
    }
}
