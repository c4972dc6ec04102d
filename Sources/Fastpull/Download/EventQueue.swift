import Synchronization

/// The one buffering policy of every event sequence (``Download/events``, ``Batch/events``): nothing
/// is dropped but progress. An unread ``Event/Kind/progress`` event is replaced by a newer one of
/// the same download (it moves to the end, after what happened meanwhile), so a consumer that reads
/// late, or slowly, gets every warning, retry and outcome and the latest progress of each download,
/// and an unread sequence grows only with what happened, not with time. One consumer.
final class EventQueue<Element: Sendable>: Sendable {
    private struct State {
        /// Unread elements, from `head` on; nil where a progress event was replaced by a newer one.
        var buffer: [Element?] = []
        var head = 0
        /// Where each download's unread progress event is in `buffer`.
        var progress: [Int: Int] = [:]
        var finished = false
        var waiter: CheckedContinuation<Element?, Never>?
    }

    private let state = Mutex(State())

    /// Adds `element`; `progressOf`: it is a progress event of that download, replacing one unread.
    func yield(_ element: Element, progressOf download: Int? = nil) {
        let waiter = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            guard !state.finished else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            if let download {
                if let earlier = state.progress[download] { state.buffer[earlier] = nil }
                state.progress[download] = state.buffer.count
            }
            state.buffer.append(element)
            return nil
        }
        waiter?.resume(returning: element)
    }

    /// Ends the sequence once what is buffered has been read.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The next element, waiting for one; nil once finished and read to the end, and when the
    /// consumer's task is cancelled (as `AsyncStream`'s own sequences end then).
    func next() async -> Element? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Element?? in
                    while state.head < state.buffer.count {
                        let index = state.head
                        state.head += 1
                        guard let element = state.buffer[index] else { continue }
                        if let download = state.progress.first(where: { $0.value == index })?.key {
                            state.progress[download] = nil
                        }
                        Self.compact(&state)
                        return .some(element)
                    }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.waiter = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// Whether a consumer waits for the next element now.
    var isWaited: Bool { state.withLock { $0.waiter != nil } }

    /// The sequence a consumer reads.
    var stream: AsyncStream<Element> {
        AsyncStream(unfolding: { [self] in await next() })
    }

    /// Drops the read part of the buffer once it is most of it.
    private static func compact(_ state: inout State) {
        guard state.head >= 256, state.head * 2 >= state.buffer.count else { return }
        let shift = state.head
        state.buffer.removeFirst(shift)
        state.head = 0
        for (download, index) in state.progress { state.progress[download] = index - shift }
    }
}
