import FastpullNet

/// A batch's items and the line of those not started yet, from which its lanes take the next one.
/// A batch made open takes more items while it runs (`fastpull -i -` adds each line of its input as
/// it comes): a lane with nothing to take waits until an item comes or the feed closes.
final class BatchFeed: Sendable {
    private struct State {
        var items: [BatchItem]
        /// Items not taken yet, in order (from `head`).
        var line: [Int]
        var head = 0
        var open: Bool
        /// Lanes waiting for an item, by ticket.
        var waiting: [Int: CheckedContinuation<Int?, Never>] = [:]
        var nextTicket = 0
    }

    private let state: PlainMutex<State>

    /// A feed of `items`, every one in the line; `open` when more may come.
    init(_ items: [BatchItem], open: Bool) {
        state = PlainMutex(State(items: items, line: Array(items.indices), open: open))
    }

    /// Every item so far, in order.
    var items: [BatchItem] { state.withLock { $0.items } }

    /// How many items there are so far.
    var count: Int { state.withLock { $0.items.count } }

    /// Whether more items may come.
    var isOpen: Bool { state.withLock { $0.open } }

    /// Whether more items may come and how many are in the line, read together.
    var outlook: (open: Bool, waiting: Int) {
        state.withLock { ($0.open, $0.line.count - $0.head) }
    }

    /// The item at `index`.
    subscript(index: Int) -> BatchItem { state.withLock { $0.items[index] } }

    /// Appends `item`, not yet in the line (``enqueue(_:)`` puts it there); its index, or nil when the
    /// feed is closed: nothing is added.
    func append(_ item: BatchItem) -> Int? {
        state.withLock { state in
            guard state.open else { return nil }
            state.items.append(item)
            return state.items.count - 1
        }
    }

    /// Puts item `index` in the line, or hands it to a lane waiting for one.
    func enqueue(_ index: Int) {
        let woken = state.withLock { state -> CheckedContinuation<Int?, Never>? in
            if let ticket = state.waiting.keys.min() { return state.waiting.removeValue(forKey: ticket) }
            state.line.append(index)
            return nil
        }
        woken?.resume(returning: index)
    }

    /// Takes `indices` out of the line (they failed before their turn).
    func remove(_ indices: Set<Int>) {
        guard !indices.isEmpty else { return }
        state.withLock { state in
            state.line = state.line[state.head...].filter { !indices.contains($0) }
            state.head = 0
        }
    }

    /// No more items: lanes waiting for one end.
    func close() {
        let woken = state.withLock { state in
            state.open = false
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for continuation in woken { continuation.resume(returning: nil) }
    }

    /// The next item not taken yet: at once when there is one, after waiting while the feed is open,
    /// nil once it is closed (or the task is cancelled while it waits).
    func next() async -> Int? {
        let ticket = state.withLock { state in
            defer { state.nextTicket += 1 }
            return state.nextTicket
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Int?? in
                    if state.head < state.line.count {
                        defer { state.head += 1 }
                        return .some(state.line[state.head])
                    }
                    guard state.open, !Task.isCancelled else { return .some(nil) }
                    state.waiting[ticket] = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            state.withLock { $0.waiting.removeValue(forKey: ticket) }?.resume(returning: nil)
        }
    }
}
