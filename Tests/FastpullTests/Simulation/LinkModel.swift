/// A modelled server, link and client machine for the ``Simulator``: what limits each connection,
/// what limits all of them together, and what each request costs.
struct LinkModel: Sendable {
    /// The name in reports.
    var name: String
    /// The file's size.
    var size: Int64
    /// The round trip, in seconds: a connection's setup takes one (plus one for TLS), every request
    /// one before its first byte, and TCP's slow start doubles the window once per round trip.
    var roundTrip: Double = 0.001
    /// Seconds the server takes, after the request arrived, before the first byte (an object store
    /// finding the object): the per-request cost beyond the round trip.
    var serverCost: Double = 0
    /// What one connection can carry, in bytes per second, by its number (the n-th connection the
    /// download opened, from 0) and the time: a server's or the path's per-connection limit.
    var perConnection: @Sendable (_ connection: Int, _ time: Double) -> Double = { _, _ in .infinity }
    /// Which connections nginx's `limit_rate` holds to their `perConnection` rate per request: every
    /// request may have sent `rate × (elapsed + 1)` bytes, so each new one bursts a second's worth.
    var burstsPerRequest: @Sendable (_ connection: Int) -> Bool = { _ in false }
    /// What all connections together can carry (a link), in bytes per second.
    var sharedCap: Double = .infinity
    /// The most bytes per second the client machine can take in, with `connections` open: its CPU
    /// (receiving, writing, hashing), less efficient with every connection (locks, context switches).
    var clientCapacity: @Sendable (_ connections: Int) -> Double = { _ in .infinity }
    /// CPU seconds the client spends per byte (for the controller's CPU reading); 0 for none.
    var cpuPerByte: Double = 0
    /// The client's cores.
    var cores = 2
    /// The share of the file kept from an interrupted run (its first part), for a resume.
    var keptShare: Double = 0
    /// How fast the client hashes the contiguous prefix, in bytes per second: the download ends when the
    /// hash has read the last byte, so bytes written far ahead of the prefix show as a hash tail.
    var hashRate = 1500 * 1_000_000.0
    /// The file's sources, where it has several (each connection fetches from the one the download
    /// binds it to, at that source's limits, beside the ones above); nil for one.
    var sources: [SourceModel]? = nil
    /// Whether new connections start slow (TCP's slow start: a window of 10 segments of 1448 bytes,
    /// doubling every round trip until it carries the connection's share).
    var slowStart = true

    /// One server of a file with several.
    struct SourceModel: Sendable {
        var name: String
        /// What one of its connections can carry, in bytes per second, by the connection's number and
        /// the time.
        var perConnection: @Sendable (_ connection: Int, _ time: Double) -> Double = { _, _ in .infinity }
        /// What all its connections together can carry.
        var sharedCap: Double = .infinity
    }

    /// The best any client could do: the whole file at the tightest aggregate limit, with every
    /// per-connection limit lifted by enough connections (a bound, not always reachable).
    func idealSeconds(connections: Int) -> Double {
        var total = 0.0
        for index in 0..<connections { total += perConnection(index, 0) }
        let rate = min(total, sharedCap, clientCapacity(1))
        let remaining = Double(size) * (1 - keptShare)
        return roundTrip * 2 + serverCost + remaining / rate
    }
}
