/// The links, servers and machines the simulator runs, each a case the first release misjudged or
/// one no machine here has.
enum SimulatedModels {
    static let mebibyte: Int64 = 1 << 20
    static let megabyte = 1_000_000.0

    /// Every model.
    static let all: [LinkModel] = [
        // Every connection throttled to 5 MB/s, nothing else limiting: as many as the ceiling allows.
        LinkModel(
            name: "5 MB/s per connection", size: 1024 * mebibyte, roundTrip: 0.002,
            perConnection: { _, _ in 5 * megabyte }),
        // nginx's limit_rate (per request, with a second's burst at the start of each) on one
        // connection in five at 1 MB/s, the rest at 20 MB/s, on a 400 MB/s path: a slow connection
        // looks fast for its first megabyte of every request.
        LinkModel(
            name: "nginx limit_rate on 1 in 5", size: 1024 * mebibyte, roundTrip: 0.002,
            perConnection: { index, _ in index % 5 == 1 ? 1 * megabyte : 20 * megabyte },
            burstsPerRequest: { index in index % 5 == 1 }, sharedCap: 400 * megabyte),
        // One link of 100 MB/s shared by all, 30 MB/s at most per connection.
        LinkModel(
            name: "shared 100 MB/s link", size: 256 * mebibyte, roundTrip: 0.01,
            perConnection: { _, _ in 30 * megabyte }, sharedCap: 100 * megabyte),
        // One connection in five at 1 MB/s, the rest at 20 MB/s, on a 400 MB/s path.
        LinkModel(
            name: "stragglers (1 in 5 at 1 MB/s)", size: 1024 * mebibyte, roundTrip: 0.005,
            perConnection: { index, _ in index % 5 == 1 ? 1 * megabyte : 20 * megabyte },
            sharedCap: 400 * megabyte),
        // Connections at 10 MB/s; the third slows to 0.3 MB/s one second in.
        LinkModel(
            name: "a connection slows mid-transfer", size: 2048 * mebibyte, roundTrip: 0.005,
            perConnection: { index, time in index == 2 && time > 1 ? 0.3 * megabyte : 10 * megabyte }),
        // An object store: every GET costs 100 ms before its first byte; 40 MB/s per connection.
        LinkModel(
            name: "object store, 100 ms per request", size: 1024 * mebibyte, roundTrip: 0.002,
            serverCost: 0.1,
            perConnection: { _, _ in 40 * megabyte }),
        // A long path: 100 ms round trips with slow start, 40 MB/s per connection.
        LinkModel(
            name: "100 ms round trip", size: 1024 * mebibyte, roundTrip: 0.1,
            perConnection: { _, _ in 40 * megabyte }),
        // 200 ms round trips, 10 MB/s per connection.
        LinkModel(
            name: "200 ms round trip", size: 256 * mebibyte, roundTrip: 0.2,
            perConnection: { _, _ in 10 * megabyte }),
        // A CPU-bound client: 2 cores take 1.2 GB/s with one connection, less with each more.
        LinkModel(
            name: "CPU-bound client", size: 1024 * mebibyte, roundTrip: 0.0002,
            perConnection: { _, _ in 900 * megabyte },
            clientCapacity: { connections in 1200 * megabyte / (1 + 0.03 * Double(max(connections - 1, 0))) },
            cpuPerByte: 2 / (1200 * megabyte)),
        // A resume with half the file kept, 5 MB/s per connection: ramps like a fresh download.
        LinkModel(
            name: "resume with half kept", size: 2048 * mebibyte, roundTrip: 0.002,
            perConnection: { _, _ in 5 * megabyte }, keptShare: 0.5),
        // A short download on loopback (the harness's nginx stragglers): 256 MiB, one connection in
        // five at 1 MB/s and the rest at 20 MB/s. The best fixed count takes a third of a second, so
        // every step of the ramp shows.
        LinkModel(
            name: "256 MiB in a third of a second", size: 256 * mebibyte, roundTrip: 0.0005,
            perConnection: { index, _ in index % 5 == 1 ? 1 * megabyte : 20 * megabyte }),
        // What no machine here has: 10 GiB at 100 ms round trip and 40 MB/s per connection.
        LinkModel(
            name: "10 GiB, 100 ms, 40 MB/s per connection", size: 10 * 1024 * mebibyte, roundTrip: 0.1,
            perConnection: { _, _ in 40 * megabyte }),
        // A server that caps its own total at 5 MB/s (a token bucket in the server); one connection
        // fills it.
        LinkModel(
            name: "a server's own cap of 5 MB/s", size: 32 * mebibyte, roundTrip: 0.001,
            sharedCap: 5 * megabyte),
        // A server capped at 40 MB/s in all, 10 MB/s per connection: four fill it.
        LinkModel(
            name: "a 40 MB/s cap, 10 MB/s per connection", size: 256 * mebibyte, roundTrip: 0.002,
            perConnection: { _, _ in 10 * megabyte }, sharedCap: 40 * megabyte),
        // `--limit-rate 8M/s` on an unlimited server: the client's own limit, shared by its connections.
        LinkModel(
            name: "--limit-rate 8 MB/s", size: 64 * mebibyte, roundTrip: 0.001,
            sharedCap: 8 * megabyte),
        // One connection goes silent a third of a second in, mid-answer; the others deliver 10 MB/s each.
        LinkModel(
            name: "a connection goes silent", size: 512 * mebibyte, roundTrip: 0.002,
            perConnection: { index, time in index == 1 && time > 0.3 ? 0 : 10 * megabyte }),
        // Two sources of different kinds: A gives each connection 5 MB/s of its own, B serves all of
        // them through one 50 MB/s link. A shared source needs a few connections, the other the rest.
        twoSources(name: "two sources: A per connection, B shared", sharedFirst: false),
        twoSources(name: "two sources: B shared named first, A per connection", sharedFirst: true),
    ]

    /// A 256 MiB file from A (5 MB/s per connection) and B (one shared 50 MB/s link), in either order.
    static func twoSources(name: String, sharedFirst: Bool) -> LinkModel {
        let perConnection = LinkModel.SourceModel(name: "A", perConnection: { _, _ in 5 * megabyte })
        let shared = LinkModel.SourceModel(name: "B", sharedCap: 50 * megabyte)
        return LinkModel(
            name: name, size: 256 * mebibyte, roundTrip: 0.002,
            sources: sharedFirst ? [shared, perConnection] : [perConnection, shared])
    }

    /// Source A of ``twoSources(name:sharedFirst:)`` alone.
    static let fasterSourceAlone = LinkModel(
        name: "A alone", size: 256 * mebibyte, roundTrip: 0.002,
        sources: [LinkModel.SourceModel(name: "A", perConnection: { _, _ in 5 * megabyte })])

    /// The models whose limit is shared by every connection, with what each cap needs: the fewest
    /// connections that reach it.
    static let capNeeds: [String: Int] = [
        "a server's own cap of 5 MB/s": 1,
        "a 40 MB/s cap, 10 MB/s per connection": 4,
        "--limit-rate 8 MB/s": 1,
        "shared 100 MB/s link": 4,
    ]

    /// The fixed counts the oracle tries.
    static let fixedCounts = [1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64]
}
