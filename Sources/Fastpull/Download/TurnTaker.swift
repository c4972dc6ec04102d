import FastpullNet

/// Lets tasks that start in order take a step in that order too: the batch's items name their outputs
/// in parallel (each probe takes its own time), but reserve them in the items' order, so that when two
/// items want one path, the earlier one always has it.
final class TurnTaker: Sendable {
    private struct State {
        /// The turns, in order, that have not been taken yet.
        var waiting: [Int]
        var taken: Set<Int> = []
        var sleepers: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state: PlainMutex<State>

    /// Turns for `order`, the indices in the order they take them.
    init(order: [Int]) {
        state = PlainMutex(State(waiting: order))
    }

    /// Adds `index`'s turn after every turn there is (an item added to an open batch).
    func append(_ index: Int) {
        state.withLock { $0.waiting.append(index) }
    }

    /// Waits until every turn before `index` has been taken, runs `step`, and takes the turn.
    func inTurn<T>(_ index: Int, _ step: () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                guard state.waiting.first != index else { return true }
                state.sleepers[index] = continuation
                return false
            }
            if ready { continuation.resume() }
        }
        defer { take(index) }
        return step()
    }

    /// Takes `index`'s turn without a step (the item failed before it, or needs none), waking the next.
    func take(_ index: Int) {
        let woken = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.taken.insert(index)
            while let first = state.waiting.first, state.taken.contains(first) { state.waiting.removeFirst() }
            guard let next = state.waiting.first else { return nil }
            return state.sleepers.removeValue(forKey: next)
        }
        woken?.resume()
    }
}
