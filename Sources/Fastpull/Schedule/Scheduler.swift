import Foundation
import Synchronization

/// The shared scheduler the connections pull work from: a ``SegmentTable`` behind a lock, plus a
/// condition the streaming hasher waits on for the contiguous prefix to grow.
final class Scheduler: Sendable {
    private let table: Mutex<SegmentTable>
    /// Signalled whenever the frontier moves or the download stops; guards nothing else.
    private let frontierChanged = NSCondition()
    private let stopped = Atomic<Bool>(false)

    init(segments: [Segment]) {
        table = Mutex(SegmentTable(segments: segments))
    }

    func assignNext() -> SegmentTable.Assignment? {
        table.withLock { $0.assignNext() }
    }

    func recordWritten(index: Int, count: Int64) {
        let moved = table.withLock { $0.recordWritten(index: index, count: count) }
        if moved { signal() }
    }

    func giveBack(index: Int) {
        table.withLock { $0.giveBack(index: index) }
    }

    /// Every segment with its progress, for the journal.
    func snapshot() -> [Segment] { table.withLock { $0.segments } }

    var frontier: Int64 { table.withLock { $0.frontier } }
    var writtenBytes: Int64 { table.withLock { $0.writtenBytes } }
    var isComplete: Bool { table.withLock { $0.isComplete } }

    /// Wakes every waiter for good: the download finished, failed or was cancelled.
    func stop() {
        stopped.store(true, ordering: .releasing)
        signal()
    }

    /// Blocks the calling thread (never a cooperative one) until the frontier passes `offset` or the
    /// scheduler stops. Returns the frontier, or nil once stopped.
    func waitForFrontier(beyond offset: Int64) -> Int64? {
        frontierChanged.lock()
        defer { frontierChanged.unlock() }
        while true {
            if stopped.load(ordering: .acquiring) { return nil }
            let current = frontier
            if current > offset { return current }
            frontierChanged.wait()
        }
    }

    private func signal() {
        frontierChanged.lock()
        frontierChanged.broadcast()
        frontierChanged.unlock()
    }
}
