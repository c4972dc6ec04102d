import FastpullNet
import FoundationEssentials
import Synchronization

/// The shared scheduler the connections pull work from: a ``SegmentTable`` behind a lock, plus a
/// condition the streaming hasher waits on for the contiguous prefix to grow.
package final class Scheduler: Sendable {
    typealias Worker = SegmentTable.Worker

    private let table: PlainMutex<SegmentTable>
    /// Signalled whenever the frontier moves or the download stops; guards nothing else.
    private let frontierChanged = Condition()
    private let stopped = Atomic<Bool>(false)
    private let clock = ContinuousClock()
    /// How far the streaming hash has read. When the hash falls more than ``hashLag`` behind the
    /// contiguous prefix (the CPU is short), connections pause between windows so that it catches up
    /// and the last byte is verified moments after it lands.
    private let hashed = Atomic<Int64>(0)
    private let hashProgress = Condition()
    /// Signalled whenever the horizon moves or the download stops.
    private let horizonMoved = Condition()
    static let hashLag: Int64 = 64 << 20

    init(segments: [Segment], settings: SegmentTable.Settings = .init()) {
        table = PlainMutex(SegmentTable(segments: segments, settings: settings))
    }

    /// What a connection asking for work is told.
    enum Work: Sendable, Equatable {
        /// Fetch this window, got this way.
        case window(SegmentTable.Window, SegmentTable.Assignment)
        /// Everything left lies past the horizon, at this offset: wait for it to move
        /// (``waitForHorizon(beyond:)``).
        case wait(horizon: Int64)
        /// Nothing is left for this connection.
        case done
    }

    /// The next window for `worker` (see ``SegmentTable/nextWindow(for:now:)``), or why there is none.
    /// Only the worker's own fetcher asks, between its answers (nothing of its is in flight then).
    func nextWork(for worker: Worker) -> Work {
        let now = clock.now
        return table.withLock { table in
            if let (window, assignment) = table.nextWindow(for: worker, now: now) {
                return .window(window, assignment)
            }
            if table.isHeldByHorizon, let horizon = table.horizon {
                table.waitsForHorizon(worker, now: now)
                return .wait(horizon: horizon)
            }
            return .done
        }
    }

    /// `worker` holds the probe's answer for bytes up to `end` (``SegmentTable/adopt(_:end:requestCost:now:)``).
    func adopt(_ worker: Worker, end: Int64, requestCost: Duration) -> SegmentTable.Window? {
        let now = clock.now
        return table.withLock { $0.adopt(worker, end: end, requestCost: requestCost, now: now) }
    }

    /// The limit windows stay within (nil: none); see ``SegmentTable/horizon``.
    var horizon: Int64? { table.withLock { $0.horizon } }

    /// Moves the horizon and wakes the connections waiting for it.
    func setHorizon(_ offset: Int64) {
        table.withLock { $0.horizon = offset }
        horizonMoved.lock()
        horizonMoved.broadcast()
        horizonMoved.unlock()
    }

    /// Blocks the calling connection thread until the horizon passes `offset`, the scheduler stops, or
    /// a tenth of a second passes (a bound, so that a retired or cancelled connection notices soon).
    func waitForHorizon(beyond offset: Int64) {
        let deadline = ContinuousClock.now + .milliseconds(100)
        horizonMoved.lock()
        defer { horizonMoved.unlock() }
        while (horizon ?? Int64.max) <= offset, !stopped.load(ordering: .acquiring) {
            if !horizonMoved.wait(until: deadline) { return }
        }
    }

    /// How many of `count` bytes the worker may write now (fewer when its range was cut).
    func claim(_ worker: Worker, count: Int) -> Int {
        Int(table.withLock { $0.claim(worker, count: Int64(count)) })
    }

    /// Claims and counts held bytes (``SegmentTable/hold(_:count:now:)``); returns how many may be
    /// written.
    func hold(_ worker: Worker, count: Int) -> Int {
        let now = clock.now
        return Int(table.withLock { $0.hold(worker, count: Int64(count), now: now) })
    }

    /// Commits held bytes once their answer's end is proven (``SegmentTable/commitHeld(_:count:)``).
    func commitHeld(_ worker: Worker, count: Int64) {
        let moved = table.withLock { $0.commitHeld(worker, count: count) }
        if moved { signal() }
    }

    func commit(_ worker: Worker, count: Int) {
        let now = clock.now
        let moved = table.withLock { $0.commit(worker, count: Int64(count), now: now) }
        if moved { signal() }
    }

    /// Commits `commit` written bytes and claims up to `claim` more in one look at the table: a
    /// connection that reads many small pieces (TLS records) settles them a few milliseconds at a time
    /// (``ClaimLease``) instead of taking the shared lock twice per read. Returns the bytes granted
    /// (fewer when the range was cut) and the connection's measured rate.
    func exchange(_ worker: Worker, commit: Int64, claim: Int64) -> (granted: Int64, rate: Double) {
        let now = clock.now
        let (granted, rate, moved) = table.withLock { table in
            let moved = commit > 0 && table.commit(worker, count: commit, now: now)
            let granted = claim > 0 ? table.claim(worker, count: claim) : 0
            return (granted, table.connections[worker]?.rate ?? 0, moved)
        }
        if moved { signal() }
        return (granted, rate)
    }

    /// Commits `commit` written bytes and gives back `unclaim` claimed bytes that will not be written:
    /// what a connection settles when its answer ends or fails.
    func settle(_ worker: Worker, commit: Int64, unclaim: Int64) {
        guard commit > 0 || unclaim > 0 else { return }
        let now = clock.now
        let moved = table.withLock { table in
            let moved = commit > 0 && table.commit(worker, count: commit, now: now)
            table.unclaim(worker, count: unclaim)
            return moved
        }
        if moved { signal() }
    }

    /// `worker` fetches from source `group` of several (``SegmentTable/setGroup(_:_:)``).
    func setGroup(_ worker: Worker, _ group: Int) {
        table.withLock { $0.setGroup(worker, group) }
    }

    /// A request of `worker` got its first byte `delay` after it was sent.
    func recordFirstByte(_ worker: Worker, after delay: Duration) {
        table.withLock { $0.recordFirstByte(worker, after: delay) }
    }

    /// How many bytes before its window's end `worker` sends its next request
    /// (``SegmentTable/aheadLead(for:)``); nil: it does not.
    func aheadLead(for worker: Worker) -> Int64? {
        table.withLock { $0.aheadLead(for: worker) }
    }

    /// The window `worker` asks for ahead, before its current answer ends
    /// (``SegmentTable/windowAhead(for:)``).
    func windowAhead(for worker: Worker) -> SegmentTable.Window? {
        table.withLock { $0.windowAhead(for: worker) }
    }

    /// Whether the answer to the request `worker` sent ahead for `window` is still its to write
    /// (``SegmentTable/takeAhead(_:_:now:)``).
    func takeAhead(_ worker: Worker, _ window: SegmentTable.Window) -> Bool {
        let now = clock.now
        return table.withLock { $0.takeAhead(worker, window, now: now) }
    }

    /// No more requests are sent ahead in this download (a server left one unanswered).
    func stopRequestsAhead() {
        table.withLock { $0.stopRequestsAhead() }
    }

    /// Tunes the table to what the connection controller found (see ``SegmentTable/tuned(_:to:)``).
    func tune(to tuning: SegmentTable.Tuning) {
        table.withLock { table in
            table.settings = SegmentTable.tuned(table.settings, to: tuning)
        }
    }

    func leave(_ worker: Worker) {
        table.withLock { $0.leave(worker) }
    }

    /// What the fetch loop reads at every tick, in one look: bytes written (by all, and by each
    /// connection), whether another connection would get work, whether all is written, and what a
    /// request typically costs.
    struct Reading: Sendable {
        var written: Int64
        var perConnection: [Int: Int64]
        /// How many connections joining now would get work (``SegmentTable/openings(now:)``).
        var openings: Int
        var hasWork: Bool { openings > 0 }
        var isComplete: Bool
        var requestCost: Double
        var size: Int64
        /// What each source's connections brought, when the file has several sources.
        var bySource: [Int: SegmentTable.SourceBytes] = [:]
    }

    func reading() -> Reading {
        let now = clock.now
        return table.withLock { table in
            Reading(
                written: table.writtenBytes, perConnection: table.connections.mapValues(\.bytes),
                openings: table.openings(now: now), isComplete: table.isComplete,
                requestCost: table.speeds.typicalRequestCost, size: table.pieces.last?.end ?? 0,
                bySource: table.bytesBySource)
        }
    }

    /// Connections stalled past the timeout; their ranges are already given back.
    func takeStalledConnections() -> [Worker] {
        let now = clock.now
        return table.withLock { $0.stalledConnections(now: now) }
    }

    /// The worker leaves on purpose: its range past what it claimed goes back (see
    /// ``SegmentTable/release(_:)``).
    func release(_ worker: Worker) {
        table.withLock { $0.release(worker) }
    }

    /// Other connections that are receiving bytes right now.
    func workingConnections(besides worker: Worker) -> Int {
        let now = clock.now
        return table.withLock { $0.workingConnections(besides: worker, now: now) }
    }

    /// Every segment with its progress, for the journal.
    package func snapshot() -> [Segment] { table.withLock { $0.segments } }

    /// Bytes `range`, all written, did not verify: they wait to be fetched again
    /// (``SegmentTable/reopen(_:)``).
    func reopen(_ range: Range<Int64>) { table.withLock { $0.reopen(range) } }

    var frontier: Int64 { table.withLock { $0.frontier } }
    var writtenBytes: Int64 { table.withLock { $0.writtenBytes } }
    var isComplete: Bool { table.withLock { $0.isComplete } }
    var hasWaitingWork: Bool { table.withLock { $0.hasWaitingWork } }
    var pieceCount: Int { table.withLock { $0.pieces.count } }

    /// Wakes every waiter for good: the download finished, failed or was cancelled.
    func stop() {
        stopped.store(true, ordering: .releasing)
        signal()
        horizonMoved.lock()
        horizonMoved.broadcast()
        horizonMoved.unlock()
        hashProgress.lock()
        hashProgress.broadcast()
        hashProgress.unlock()
    }

    /// The hasher has read everything before `offset`.
    /// How far the streaming hash has read.
    package var hashedBytes: Int64 { hashed.load(ordering: .acquiring) }

    func recordHashed(_ offset: Int64) {
        hashed.store(offset, ordering: .releasing)
        hashProgress.lock()
        hashProgress.broadcast()
        hashProgress.unlock()
    }

    /// Blocks the calling connection thread while the hash is more than ``hashLag`` behind the
    /// contiguous prefix, for at most `limit` (a bound, so nothing can wait on itself for long).
    func waitForHasher(limit: Duration = .seconds(1)) {
        guard frontier - hashed.load(ordering: .acquiring) > Self.hashLag else { return }
        let deadline = ContinuousClock.now + limit
        hashProgress.lock()
        defer { hashProgress.unlock() }
        while frontier - hashed.load(ordering: .acquiring) > Self.hashLag, !stopped.load(ordering: .acquiring)
        {
            if !hashProgress.wait(until: deadline) { return }
        }
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
