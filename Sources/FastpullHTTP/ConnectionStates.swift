/// Where every connection of a ``ConnectionCache`` is in its life, as a state machine with no I/O:
/// each event moves one connection and returns what its owner must do after the lock (close these,
/// reuse that one, open a new one). An event that cannot happen to a connection in its state (giving
/// back one that is idle, closing one twice, a close the cache did not start of one it holds idle)
/// throws ``Impossible``: a second holder somewhere, the fault this machine exists to catch.
///
/// ```
///   lease ──▶ connecting ──connected──▶ leased ──release(reusable)──▶ idle ──lease──▶ leased
///                 │                       │  ╲                          │
///          connectFailed              closed  release(not reusable)   expired, over the limit,
///                 ▼                       ▼    ╲                      shut down
///               gone ◀──────────────── gone ◀── closing ◀──────────────┘
/// ```
///
/// `closing` is a connection the cache chose to close (its close is an action after the lock); the
/// connection's own close report (``closed(_:)``) then removes it. A leased connection that its holder
/// closes goes straight from `leased` to gone. Nothing is kept of a connection once it is gone, so
/// an event for it afterwards is impossible too.
package struct ConnectionStates<Key: Hashable>: Sendable where Key: Sendable {
    package typealias ID = Int

    package enum State: Equatable, Sendable {
        case connecting
        case leased
        case idle(since: ContinuousClock.Instant)
        case closing
    }

    /// An event that cannot happen to the connection in the state it is in.
    package struct Impossible: Error, Equatable, CustomStringConvertible {
        package let event: String
        package let id: ID
        /// Nil: the connection is gone (closed), or never was.
        package let state: State?

        package var description: String {
            "impossible: \(event) of connection \(id) while \(state.map { "\($0)" } ?? "gone")"
        }
    }

    /// What a lease asks of the owner.
    package enum Lease: Equatable, Sendable {
        /// Use this idle connection (it may have gone bad while idle; then report it ``closed(_:)``).
        case reuse(ID)
        /// Open a new connection and report ``connected(_:)`` or ``connectFailed(_:)``.
        case connect(ID)
        /// The cache is shut down: no connection.
        case refused
    }

    private struct Entry {
        let key: Key
        var state: State
    }

    private var entries: [ID: Entry] = [:]
    /// The idle connections, oldest first.
    private var idleOrder: [ID] = []
    private var nextID: ID = 0
    /// Set by ``shutDown()``: no new lease, and every connection given back is closed.
    package private(set) var isShutDown = false

    /// At most this many connections wait idle; more close the oldest.
    package let idleLimit: Int
    /// How long a connection may wait idle before it is closed.
    package let idleLifetime: Duration

    package init(idleLimit: Int, idleLifetime: Duration) {
        self.idleLimit = idleLimit
        self.idleLifetime = idleLifetime
    }

    /// A connection for `key`: the most recently idle one (unless `fresh`), else a new one to open.
    /// `closing`: idle ones past their lifetime, to close after the lock.
    package mutating func lease(_ key: Key, fresh: Bool = false, now: ContinuousClock.Instant)
        -> (lease: Lease, closing: [ID])
    {
        guard !isShutDown else { return (.refused, []) }
        let closing = expire(now: now)
        if !fresh, let index = idleOrder.lastIndex(where: { entries[$0]?.key == key }) {
            let id = idleOrder.remove(at: index)
            entries[id]?.state = .leased
            return (.reuse(id), closing)
        }
        let id = nextID
        nextID += 1
        entries[id] = Entry(key: key, state: .connecting)
        return (.connect(id), closing)
    }

    /// The connection being opened for a lease is open and leased; false when the cache shut down
    /// meanwhile: then it is `closing`, and the owner closes it instead of using it.
    package mutating func connected(_ id: ID) throws(Impossible) -> Bool {
        try expect(id, .connecting, "connected")
        guard !isShutDown else {
            entries[id]?.state = .closing
            return false
        }
        entries[id]?.state = .leased
        return true
    }

    /// The connection being opened for a lease could not be opened: it is gone.
    package mutating func connectFailed(_ id: ID) throws(Impossible) {
        try expect(id, .connecting, "connectFailed")
        entries[id] = nil
    }

    /// The holder gives a leased connection back: it waits idle when `reusable` and the cache is not
    /// shut down, and is closed otherwise. Returns the connections to close after the lock (this one
    /// when not kept, the oldest idle one past ``idleLimit``, idle ones past ``idleLifetime``).
    package mutating func release(_ id: ID, reusable: Bool, now: ContinuousClock.Instant) throws(Impossible)
        -> [ID]
    {
        try expect(id, .leased, "release")
        guard reusable, !isShutDown else {
            entries[id]?.state = .closing
            return [id]
        }
        var closing = expire(now: now)
        entries[id]?.state = .idle(since: now)
        idleOrder.append(id)
        if idleOrder.count > idleLimit { closing.append(closeIdle(idleOrder.removeFirst())) }
        return closing
    }

    /// The connection has closed: its holder closed it while leased, or the cache's close of it
    /// (`closing`) is done. It is gone.
    package mutating func closed(_ id: ID) throws(Impossible) {
        guard let entry = entries[id] else { throw Impossible(event: "closed", id: id, state: nil) }
        guard entry.state == .leased || entry.state == .closing else {
            throw Impossible(event: "closed", id: id, state: entry.state)
        }
        entries[id] = nil
    }

    /// No lease from now on, and every connection given back closes; returns the idle ones, to close
    /// after the lock. Leased and connecting ones close when they come back.
    package mutating func shutDown() -> [ID] {
        isShutDown = true
        return closeAllIdle()
    }

    /// Closes every idle connection (returned, to close after the lock); the cache stays open.
    package mutating func closeAllIdle() -> [ID] {
        defer { idleOrder.removeAll() }
        for id in idleOrder { entries[id]?.state = .closing }
        return idleOrder
    }

    /// The connections in `state` now (`idle` counts every idle one, whatever its time).
    package func count(_ state: State) -> Int {
        if case .idle = state { return idleOrder.count }
        return entries.values.count { $0.state == state }
    }

    /// The connections not gone yet, in any state.
    package var openCount: Int { entries.count }

    /// The state of connection `id`; nil once it is gone.
    package func state(of id: ID) -> State? { entries[id]?.state }

    private mutating func expect(_ id: ID, _ state: State, _ event: String) throws(Impossible) {
        guard let entry = entries[id], entry.state == state else {
            throw Impossible(event: event, id: id, state: entries[id]?.state)
        }
    }

    /// Marks an idle connection (already out of ``idleOrder``) `closing`.
    private mutating func closeIdle(_ id: ID) -> ID {
        entries[id]?.state = .closing
        return id
    }

    /// Removes the idle connections older than ``idleLifetime`` (they are oldest first) and returns them.
    private mutating func expire(now: ContinuousClock.Instant) -> [ID] {
        let cutoff = now - idleLifetime
        let stale = idleOrder.prefix { id in
            if case .idle(let since) = entries[id]?.state { return since < cutoff }
            return false
        }
        guard !stale.isEmpty else { return [] }
        idleOrder.removeFirst(stale.count)
        for id in stale { entries[id]?.state = .closing }
        return Array(stale)
    }
}
