import Foundation
import Testing

@testable import FastpullHTTP
@testable import FastpullNet

/// The connection state machine on its own: every transition it allows, and every impossible event
/// refused with the state it found (a connection with two holders, closed twice, given back twice).
@Suite("Connection states")
struct ConnectionStatesTests {
    typealias Machine = ConnectionStates<String>
    let start = ContinuousClock.now

    func machine(limit: Int = 4, lifetime: Duration = .seconds(60)) -> Machine {
        Machine(idleLimit: limit, idleLifetime: lifetime)
    }

    /// Leased, opened, given back, leased again: the idle one is reused, for its own key only.
    @Test func aConnectionGivenBackIsReusedForItsKeyOnly() throws {
        var states = machine()
        guard case (.connect(let a), []) = states.lease("a", now: start) else {
            Issue.record()
            return
        }
        #expect(states.state(of: a) == .connecting)
        #expect(try states.connected(a))
        #expect(try states.release(a, reusable: true, now: start).isEmpty)
        #expect(states.count(.idle(since: start)) == 1)
        guard case (.connect(let b), []) = states.lease("b", now: start) else {
            Issue.record()
            return
        }
        #expect(b != a)
        #expect(states.lease("a", now: start) == (.reuse(a), []))
        #expect(states.state(of: a) == .leased)
        // `fresh` never reuses.
        guard case (.connect, []) = states.lease("a", fresh: true, now: start) else {
            Issue.record()
            return
        }
    }

    /// A connection whose last answer forbids reuse, or given back after shutdown, is closed; the
    /// oldest idle one goes past the limit, and any idle past its lifetime.
    @Test func whatIsNotKeptIsClosed() throws {
        var states = machine(limit: 2, lifetime: .seconds(10))
        var ids: [Int] = []
        for _ in 0..<4 {
            guard case (.connect(let id), _) = states.lease("a", fresh: true, now: start) else {
                Issue.record()
                return
            }
            #expect(try states.connected(id))
            ids.append(id)
        }
        #expect(try states.release(ids[0], reusable: false, now: start) == [ids[0]])
        #expect(states.state(of: ids[0]) == .closing)
        try states.closed(ids[0])
        #expect(states.state(of: ids[0]) == nil)
        #expect(try states.release(ids[1], reusable: true, now: start).isEmpty)
        #expect(try states.release(ids[2], reusable: true, now: start + .seconds(5)).isEmpty)
        // Over the limit of two: the oldest closes.
        #expect(try states.release(ids[3], reusable: true, now: start + .seconds(6)) == [ids[1]])
        // Past its lifetime by the next lease: ids[2] (idle since +5) closes at +16, ids[3] is reused.
        #expect(states.lease("a", now: start + .seconds(16)) == (.reuse(ids[3]), [ids[2]]))
        #expect(states.openCount == 3)
        let after = states.shutDown()
        #expect(after.isEmpty)
        #expect(states.lease("a", now: start) == (.refused, []))
        #expect(try states.release(ids[3], reusable: true, now: start) == [ids[3]])
    }

    /// A connection being opened when the cache shuts down is closed on arrival.
    @Test func aConnectionOpenedAfterShutdownIsClosed() throws {
        var states = machine()
        guard case (.connect(let id), _) = states.lease("a", now: start) else {
            Issue.record()
            return
        }
        #expect(states.shutDown().isEmpty)
        #expect(try !states.connected(id))
        #expect(states.state(of: id) == .closing)
        try states.closed(id)
        #expect(states.openCount == 0)
    }

    /// The impossible: each refused, with the event and the state the connection was in.
    @Test func impossibleEventsThrow() throws {
        var states = machine()
        guard case (.connect(let id), _) = states.lease("a", now: start) else {
            Issue.record()
            return
        }
        // Given back or closed before it is open.
        #expect(throws: Machine.Impossible(event: "release", id: id, state: .connecting)) {
            try states.release(id, reusable: true, now: start)
        }
        #expect(throws: Machine.Impossible(event: "closed", id: id, state: .connecting)) {
            try states.closed(id)
        }
        #expect(try states.connected(id))
        #expect(throws: Machine.Impossible(event: "connected", id: id, state: .leased)) {
            try states.connected(id)
        }
        _ = try states.release(id, reusable: true, now: start)
        // Given back twice, or closed by someone while the cache holds it idle: a second holder.
        #expect(throws: Machine.Impossible(event: "release", id: id, state: .idle(since: start))) {
            try states.release(id, reusable: true, now: start)
        }
        #expect(throws: Machine.Impossible(event: "closed", id: id, state: .idle(since: start))) {
            try states.closed(id)
        }
        _ = states.lease("a", now: start)
        try states.closed(id)
        // Gone: closed twice, given back after its close, or a number never leased.
        #expect(throws: Machine.Impossible(event: "closed", id: id, state: nil)) { try states.closed(id) }
        #expect(throws: Machine.Impossible(event: "release", id: id, state: nil)) {
            try states.release(id, reusable: true, now: start)
        }
        #expect(throws: Machine.Impossible(event: "connectFailed", id: 99, state: nil)) {
            try states.connectFailed(99)
        }
        #expect(states.openCount == 0)
    }
}

/// The cache that runs the machine: a holder's fault (a connection given back twice, or closed by
/// someone after it went back) is recorded, not absorbed, and shutting down closes everything.
@Suite("Connection cache")
struct ConnectionCacheTests {
    /// A transport that only counts its closes.
    final class Quiet: Transport, @unchecked Sendable {
        var closes = 0
        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int { 0 }
        func write(_ bytes: UnsafeRawBufferPointer) throws {}
        func shutdown() {}
        func close() { closes += 1 }
    }

    let cache = ConnectionCache(
        tlsOptions: TLSOptions(caFile: nil, insecure: false),
        timeouts: Timeouts(connect: .seconds(1), idle: .seconds(1)))
    let key = ConnectionCache.Key(origin: Origin(URL(string: "http://127.0.0.1:9/")!)!, proxy: nil)

    func leased(_ transport: Quiet) throws -> HTTPConnection {
        switch try cache.lease(key) {
        case .reuse(let connection): return connection
        case .open(let opening):
            return try opening.admit { id, closed in
                HTTPConnection(origin: key.origin, transport: transport, leaseID: id, onClose: closed)
            }
        }
    }

    @Test func aSecondHolderIsCaught() throws {
        let transport = Quiet()
        let connection = try leased(transport)
        #expect(cache.leasedCount == 1)
        cache.giveBack(connection, as: key)
        #expect(cache.idleCount == 1 && cache.leasedCount == 0)
        #expect(cache.impossibleEvents.isEmpty)
        // Given back again: refused, and the idle connection is not kept twice.
        cache.giveBack(connection, as: key)
        #expect(cache.impossibleEvents.map(\.event) == ["release"])
        #expect(cache.idleCount == 1)
        // Closed by a holder that gave it back already.
        connection.close()
        #expect(cache.impossibleEvents.map(\.event) == ["release", "closed"])
    }

    @Test func shutdownClosesWhatIsIdleAndWhatComesBack() throws {
        let idle = Quiet()
        let busy = Quiet()
        let first = try leased(idle)
        let second = try leased(busy)
        cache.giveBack(first, as: key)
        cache.closeAll(forGood: true)
        #expect(idle.closes == 1)
        #expect(cache.openCount == 1)
        cache.giveBack(second, as: key)
        #expect(busy.closes == 1)
        #expect(cache.openCount == 0)
        #expect(throws: NetError.cancelled) { try leased(Quiet()) }
        #expect(cache.impossibleEvents.isEmpty)
    }

    /// A lease dropped without a connection (the connect failed) is forgotten.
    @Test func aFailedOpeningIsForgotten() throws {
        if case .open(let opening) = try cache.lease(key) { _ = consume opening }
        #expect(cache.openCount == 0)
        #expect(cache.impossibleEvents.isEmpty)
    }
}
