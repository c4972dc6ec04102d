import FastpullNet
import Synchronization

/// Lets a cancellation handler reach the connection a task is blocked on: the task attaches its
/// current connection, and `cancel()` (from any thread) shuts it down so the blocked call returns.
package final class CancellationSlot: Sendable {
    package init() {}

    private let state = Mutex<(cancelled: Bool, evicted: Bool, connection: HTTPConnection?)>(
        (false, false, nil))
    private let retired = Atomic<Bool>(false)

    /// Makes `connection` the one to shut down on cancellation; throws if already cancelled.
    package func attach(_ connection: HTTPConnection) throws(NetError) {
        let cancelled = state.withLock { state in
            if !state.cancelled { state.connection = connection }
            return state.cancelled
        }
        if cancelled {
            connection.cancel()
            throw .cancelled
        }
    }

    package func detach() {
        state.withLock { $0.connection = nil }
    }

    package var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Shuts down the attached connection because the scheduler took its range away (a stall); the
    /// task goes on with other work. Returns true once, to the task, via ``takeEviction()``.
    package func evict() {
        let connection = state.withLock { state in
            state.evicted = true
            return state.connection
        }
        connection?.cancel()
    }

    /// Whether the connection was evicted and the task has not yet taken the mark.
    package var isEvicted: Bool { state.withLock { $0.evicted } }

    /// Whether the last failure was an eviction; clears the mark.
    package func takeEviction() -> Bool {
        state.withLock { state in
            defer { state.evicted = false }
            return state.evicted
        }
    }

    /// Asks the task to finish: fewer connections do as well. It stops at its next window boundary or
    /// cut, without an error.
    package func retire() {
        retired.store(true, ordering: .releasing)
    }

    package var isRetired: Bool { retired.load(ordering: .acquiring) }

    /// Shuts down the attached connection, now and for any attached later.
    package func cancel() {
        let connection = state.withLock { state in
            state.cancelled = true
            return state.connection
        }
        connection?.cancel()
    }
}
