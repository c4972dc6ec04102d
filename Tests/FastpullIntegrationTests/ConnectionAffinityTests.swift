import FastpullFixtures
import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP
@testable import FastpullNet

/// A connection thread keeps its own kept-alive socket between its requests: on a link that serves
/// some sockets slower than others, one taken from the shared idle ones may be a slow one another
/// thread left (a shaped run's fast connection turned into a 1 MB/s one at its next request).
@Suite("A connection keeps its own socket")
struct ConnectionAffinityTests {
    let server: FixtureServer

    init() throws {
        server = try FixtureServer()
    }

    /// Fetches `url` through `pool` (on `own` when given and usable) and returns the connection the
    /// answer came on, idle and detached.
    func fetch(_ url: URL, from pool: ConnectionPool, preferring own: HTTPConnection? = nil) throws
        -> HTTPConnection
    {
        let origin = try #require(Origin(url))
        let slot = CancellationSlot()
        let (connection, head) = try pool.exchange(
            pool.request("GET", url, origin: origin), to: origin, slot: slot, preferring: own)
        connection.discardBody(of: head, method: "GET")
        slot.detach()
        return connection
    }

    /// Two sockets answer and go idle; the request that prefers the first goes on the first, though
    /// the second went idle later (the shared idle ones hand out the latest first).
    @Test func theRequestGoesOnTheSocketItPrefers() throws {
        let pool = ConnectionPool(tlsOptions: TLSOptions(), timeouts: Timeouts())
        defer { pool.closeAll() }
        let url = server.url("/gen/4096")
        func fetch(preferring own: HTTPConnection? = nil) throws -> HTTPConnection {
            try self.fetch(url, from: pool, preferring: own)
        }
        let first = try fetch()
        let second = try fetch()
        #expect(first !== second)
        pool.giveBack(second)
        let again = try fetch(preferring: first)
        #expect(again === first)
        pool.giveBack(again)
        // Without a preference the latest idle one is taken: the one a thread gave back last.
        let latest = try fetch()
        #expect(latest === first)
        latest.close()
    }

    /// An own socket to another origin (a mirror) is not used there; it goes back to the idle ones.
    @Test func anOwnSocketToAnotherOriginGoesBack() throws {
        let other = try FixtureServer()
        defer { other.stop() }
        let pool = ConnectionPool(tlsOptions: TLSOptions(), timeouts: Timeouts())
        defer { pool.closeAll() }
        func fetch(_ url: URL, preferring own: HTTPConnection? = nil) throws -> HTTPConnection {
            try self.fetch(url, from: pool, preferring: own)
        }
        let mine = try fetch(server.url("/gen/4096"))
        let elsewhere = try fetch(other.url("/gen/4096"), preferring: mine)
        #expect(elsewhere !== mine)
        #expect(elsewhere.origin != mine.origin)
        elsewhere.close()
        // The own socket went back: the next request to its origin finds it idle.
        let back = try fetch(server.url("/gen/4096"))
        #expect(back === mine)
        back.close()
    }
}
