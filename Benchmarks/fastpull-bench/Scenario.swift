/// How a server limits the body bytes of its responses.
enum RateRule: Sendable, Hashable {
    /// No limit.
    case unlimited
    /// Every connection (every request, for nginx) at most this many bytes per second.
    case perConnection(Int)
    /// Every `every`-th connection (by the server's connection number) at `slow` bytes per second, the
    /// others at `fast`.
    case stragglers(every: Int, slow: Int, fast: Int)
}

/// The server a scenario downloads from.
enum ServerChoice: Sendable {
    /// nginx from a generated configuration; files are served under `/<location>/`.
    case nginx(location: String, rate: RateRule)
    /// The in-process `FastpullFixtures` server, for what nginx cannot do: a shared total rate, time to
    /// first byte. Files are served under `/files/` with these query parameters.
    /// With `stallAfter`, the first answer of each run stops after that many body bytes and keeps its
    /// connection open: a connection that goes silent mid-answer.
    case fixture(totalRate: Int?, perConnectionRate: Int?, ttfbMilliseconds: Int, stallAfter: Int64? = nil)
    /// nginx without limits in a network namespace of the scenario's own, whose link the kernel shapes
    /// (needs root); files under `/plain/`.
    case shapedNginx(Shaping)
    /// moto's S3 server; files by presigned URL.
    case objectStore
    /// Several nginx server blocks in a network namespace of the scenario's own, one per mirror, each on
    /// an address of its own (127.0.0.1, 127.0.0.2…), the kernel shaping each one's connections to its
    /// rate (needs root); files under `/plain/`. The first mirror's URL is the one a tool is given first.
    case shapedMirrors([MirrorSpec])

    /// A short description for the report.
    var summary: String {
        switch self {
        case .nginx(_, let rate):
            switch rate {
            case .unlimited: return "nginx, sendfile, no limit"
            case .perConnection(let bytes): return "nginx, limit_rate \(megabytes(bytes)) per connection"
            case .stragglers(let every, let slow, let fast):
                return
                    "nginx, \(megabytes(fast)) per connection, every \(every)th connection \(megabytes(slow))"
            }
        case .fixture(let total, let perConnection, let ttfb, let stallAfter):
            var parts = ["fixture server"]
            if let perConnection { parts.append("\(megabytes(perConnection)) per connection") }
            if let total { parts.append("\(megabytes(total)) total") }
            if ttfb > 0 { parts.append("\(ttfb) ms to first byte") }
            if let stallAfter { parts.append("the first answer goes silent after \(stallAfter) bytes") }
            return parts.joined(separator: ", ")
        case .shapedNginx(let shaping):
            return "nginx, sendfile, \(shaping.summary) (tc in a network namespace)"
        case .objectStore:
            return "moto S3 server, presigned GET URLs (about 0.1 s per request)"
        case .shapedMirrors(let mirrors):
            let limits = Set(mirrors.map(\.connectionLimit))
            let limit =
                limits.count == 1 && limits.first! != nil
                ? ", each answering 503 beyond \(limits.first!!) connections from one client (limit_conn)"
                : ""
            let how = mirrors.contains(where: \.sharedLink) ? "kernel-shaped" : "kernel-shaped per connection"
            return "nginx, sendfile, \(mirrors.count) mirror\(mirrors.count == 1 ? "" : "s") \(how): "
                + mirrors.map(\.label).joined(separator: ", ") + limit + " (tc in a network namespace)"
        }
    }

    private func megabytes(_ bytesPerSecond: Int) -> String { megabytesPerSecond(bytesPerSecond) }
}

/// `20 MB/s` (MB = 10^6 bytes).
func megabytesPerSecond(_ bytesPerSecond: Int) -> String {
    let value = Double(bytesPerSecond) / 1e6
    return value == value.rounded() ? "\(Int(value)) MB/s" : "\(value) MB/s"
}

/// One mirror of a several-source scenario: an nginx server block of its own in the scenario's network
/// namespace.
struct MirrorSpec: Sendable {
    /// A letter for the report ("A").
    var name: String
    /// The kernel shapes every connection from it to this many bytes per second.
    var rate: Int
    /// It answers 503 beyond this many concurrent requests from one client (nginx `limit_conn`).
    var connectionLimit: Int?
    /// Its `priority` in the Metalink file (1 is the most preferred).
    var priority: Int
    /// Whether `rate` is one link all of its connections share (`htb`, one class), not each one's.
    var sharedLink = false
    /// It serves a copy whose byte at this offset is inverted (same size, same modification time, so the
    /// same ETag and Last-Modified as the others: a mirror whose copy went bad, not another version).
    var corruptOffset: Int64? = nil

    /// `A 20 MB/s`, and `(bad piece)` for the one that flips a byte.
    var label: String {
        "\(name) \(megabytesPerSecond(rate))" + (sharedLink ? " shared" : "")
            + (corruptOffset == nil ? "" : " (bad piece)")
    }
}

/// What is downloaded in one run.
enum Workload: Sendable {
    /// One file.
    case singleFile
    /// Many small files through each tool's batch mode.
    case manyFiles(count: Int, quickCount: Int)
    /// One file, interrupted with SIGINT once the server has sent `killFraction` of it, then the same
    /// command again (with the tool's resume option).
    case resume(killFraction: Double)
    /// One file from every mirror of the server, named on the tool's command line with the file's
    /// SHA-256 (each tool's way to give several sources of one file).
    case severalSources
    /// One file from a Metalink 4 file the harness writes: the mirrors with their priorities, the size,
    /// the SHA-256 and the SHA-1 of each 1 MiB piece.
    case metalink

    /// True for the workloads that give a tool several sources of one file.
    var hasSeveralSources: Bool {
        switch self {
        case .severalSources, .metalink: true
        case .singleFile, .manyFiles, .resume: false
        }
    }
}

/// Where the output files go.
enum Destination: String, Sendable, Codable {
    /// A tmpfs folder (`/dev/shm` by default), so the disk is never the limit.
    case tmpfs
    /// A folder on the disk that holds the output directory (the repository's disk by default).
    case disk
}

/// The best time a perfect client could reach: `latency + size / bytesPerSecond`.
struct IdealModel: Sendable {
    /// The achievable aggregate rate in bytes per second.
    var bytesPerSecond: Double
    /// A fixed cost added once (e.g. one time-to-first-byte).
    var latency: Double = 0
    /// How the rate was derived, for the report.
    var note: String

    /// The ideal seconds for `bytes`.
    func seconds(for bytes: Int64) -> Double { latency + Double(bytes) / bytesPerSecond }
}

/// One named benchmark scenario: a workload, a server with its limits, and where the output goes.
struct Scenario: Sendable {
    /// The name used with `--scenario`.
    var name: String
    /// What it shows, for the README and the report.
    var summary: String
    var workload: Workload = .singleFile
    /// The file size (each file's size for `manyFiles`, unless ``sizes`` gives one per file).
    var size: Int64
    /// The file size in `--quick` mode.
    var quickSize: Int64
    /// For a `manyFiles` batch of unequal files: every file's size (and in `--quick` mode).
    var sizes: [Int64]? = nil
    var quickSizes: [Int64]? = nil
    var server: ServerChoice
    /// The rate each tool is asked to keep to itself (its `--limit-rate`), in bytes per second.
    var clientRate: Int? = nil
    var tls = false
    var destination = Destination.tmpfs
    /// The file goes to a reader that takes it in order (nil: the tool writes the output file).
    var reader: OrderedReader? = nil
    var ideal: IdealModel? = nil
    /// A run that takes longer is killed and reported as a timeout.
    var timeoutSeconds: Double
    /// Restart the server before every run (so connection numbers start at 1 each time).
    var restartServerEachRun = false
    /// For a resume from a server that cannot count bytes live (nginx): interrupt after this long.
    var interruptAfterSeconds: Double? = nil
    /// The same in `--quick` mode, where the file is smaller.
    var quickInterruptAfterSeconds: Double? = nil

    /// When to interrupt in this mode, for a resume from a server that cannot count bytes live.
    func interruptAfter(quick: Bool) -> Double? {
        quick ? quickInterruptAfterSeconds ?? interruptAfterSeconds : interruptAfterSeconds
    }

    /// The number of files a run downloads.
    func fileCount(quick: Bool) -> Int {
        if let sizes = fileSizes(quick: quick) { return sizes.count }
        if case .manyFiles(let count, let quickCount) = workload { return quick ? quickCount : count }
        return 1
    }

    /// The size of each file (of the first, for a batch of unequal files).
    func fileSize(quick: Bool) -> Int64 { fileSizes(quick: quick)?.first ?? (quick ? quickSize : size) }

    /// Every file's size, for a batch of unequal files.
    func fileSizes(quick: Bool) -> [Int64]? { quick ? quickSizes ?? sizes : sizes }

    /// The bytes one run downloads.
    func totalBytes(quick: Bool) -> Int64 {
        fileSizes(quick: quick)?.reduce(0, +) ?? fileSize(quick: quick) * Int64(fileCount(quick: quick))
    }
}

private let kibibyte: Int64 = 1024
private let mebibyte: Int64 = 1024 * 1024
private let gibibyte: Int64 = 1024 * 1024 * 1024

/// `count` sizes from 4 to 260 KiB, the same in every session (a fixed linear congruential sequence).
private func smallFileSizes(count: Int) -> [Int64] {
    var state: UInt64 = 0x5EED
    return (0..<count).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return 4 * kibibyte + Int64((state >> 33) % UInt64(256 * kibibyte + 1))
    }
}

/// The scenarios, in the order they run.
enum ScenarioTable {
    /// Rates shared by the scenarios and their ideal models (MB = 10^6 bytes).
    static let throttledRate = 20_000_000
    static let stragglerSlowRate = 1_000_000
    static let linkCapPerConnection = 10_000_000
    static let linkCapTotal = 100_000_000
    static let latencyPerConnection = 5_000_000
    static let latencyTTFB = 50
    static let resumeTotal = 200_000_000
    /// The rate every tool is asked to keep to (`limit-rate`).
    static let clientLimit = 8_000_000
    /// A server's own cap on its total rate (`server-cap`).
    static let serverCapTotal = 5_000_000
    static let shapedPerConnection = 5_000_000
    /// The scenario whose fresh runs a resume scenario's reruns are held against (the same link).
    static let freshCounterparts = ["shaped-resume": "shaped-per-connection"]
    static let shapedFast = 20_000_000
    static let shapedSlow = 1_000_000
    static let shapedCap = 50_000_000
    static let mirrorFast = 20_000_000
    static let mirrorSlow = 5_000_000
    static let mirrorSlowest = 1_000_000
    static let mirrorConnections = 4
    /// Where the bad mirror of `mirrors-metalink` flipped a byte: early in the first piece, which every
    /// tool fetches first from the source listed first.
    static let mirrorCorruptOffset: Int64 = 100_000

    /// The mirrors of the `mirrors` scenarios: 20, 5 and 1 MB/s per connection, 4 connections each.
    /// With `corrupt`, C (the slowest) is listed first in the Metalink file and serves one flipped byte in
    /// the first piece.
    static func mirrors(corrupt: Bool) -> [MirrorSpec] {
        [
            MirrorSpec(
                name: "A", rate: mirrorFast, connectionLimit: mirrorConnections, priority: corrupt ? 2 : 1),
            MirrorSpec(
                name: "B", rate: mirrorSlow, connectionLimit: mirrorConnections, priority: corrupt ? 3 : 2),
            MirrorSpec(
                name: "C", rate: mirrorSlowest, connectionLimit: mirrorConnections, priority: corrupt ? 1 : 3,
                corruptOffset: corrupt ? mirrorCorruptOffset : nil),
        ]
    }

    /// The two sources of `sources-kinds`: A limits each connection to 5 MB/s, B shares one 50 MB/s
    /// link among all of them.
    static let kindsOfSources = [
        MirrorSpec(name: "A", rate: shapedPerConnection, connectionLimit: nil, priority: 1),
        MirrorSpec(name: "B", rate: 50_000_000, connectionLimit: nil, priority: 2, sharedLink: true),
    ]

    /// What the two sources give together: 64 connections, all but one on A, and B's link.
    static let kindsIdeal = IdealModel(
        bytesPerSecond: Double(63 * shapedPerConnection + 50_000_000),
        note: "63 connections × 5 MB/s on A, plus B's 50 MB/s link")

    /// What the mirrors can give one client at most: each limit × each rate.
    static let mirrorsIdeal = IdealModel(
        bytesPerSecond: Double(mirrorConnections * (mirrorFast + mirrorSlow + mirrorSlowest)),
        note: "each mirror's 4 connections (its limit_conn) at its rate: 4 × (20 + 5 + 1) MB/s")

    static let all: [Scenario] = [
        Scenario(
            name: "loopback",
            summary: "1 GiB from nginx (sendfile) over loopback into tmpfs, no limits. No ideal time: this "
                + "shows CPU per byte and what the client itself can move.",
            size: gibibyte, quickSize: 64 * mebibyte,
            server: .nginx(location: "plain", rate: .unlimited), timeoutSeconds: 180),
        Scenario(
            name: "loopback-disk",
            summary: "The same 1 GiB, written to the disk that holds the output folder instead of tmpfs: "
                + "where the disk (and fsync) becomes the limit.",
            size: gibibyte, quickSize: 64 * mebibyte,
            server: .nginx(location: "plain", rate: .unlimited), destination: .disk, timeoutSeconds: 300),
        orderedScenario("ordered-null", .nullDevice),
        orderedScenario("ordered-pipe", .pipe),
        orderedScenario("ordered-fifo", .fifo),
        Scenario(
            name: "throttled",
            summary: "256 MiB, nginx limit_rate 20 MB/s per connection: the value of more connections.",
            size: 256 * mebibyte, quickSize: 16 * mebibyte,
            server: .nginx(location: "throttled", rate: .perConnection(throttledRate)),
            ideal: IdealModel(
                bytesPerSecond: Double(16 * throttledRate), note: "16 connections × 20 MB/s"),
            timeoutSeconds: 120),
        Scenario(
            name: "stragglers",
            summary: "256 MiB, nginx: every 5th connection (by nginx's connection number, restarted "
                + "before each run) at 1 MB/s, the others at 20 MB/s. A static split waits for its slowest part.",
            size: 256 * mebibyte, quickSize: 16 * mebibyte,
            server: .nginx(
                location: "stragglers",
                rate: .stragglers(every: 5, slow: stragglerSlowRate, fast: throttledRate)),
            ideal: IdealModel(
                bytesPerSecond: Double(13 * throttledRate + 3 * stragglerSlowRate),
                note: "16 connections, 3 of them at 1 MB/s: 13 × 20 + 3 × 1 MB/s"),
            timeoutSeconds: 120, restartServerEachRun: true),
        Scenario(
            name: "link-cap",
            summary: "128 MiB, fixture server: 10 MB/s per connection and 100 MB/s in total (a shared link). "
                + "Every tool at its default and at its best settings.",
            size: 128 * mebibyte, quickSize: 8 * mebibyte,
            server: .fixture(
                totalRate: linkCapTotal, perConnectionRate: linkCapPerConnection, ttfbMilliseconds: 0),
            ideal: IdealModel(bytesPerSecond: Double(linkCapTotal), note: "the 100 MB/s total cap"),
            timeoutSeconds: 90),
        Scenario(
            name: "server-cap",
            summary: "32 MiB, fixture server capping its own total at 5 MB/s (a token bucket in the server), "
                + "nothing per connection: one connection fills it, and more only cost the server. "
                + "The time, and how many connections each tool opened.",
            size: 32 * mebibyte, quickSize: 4 * mebibyte,
            server: .fixture(totalRate: serverCapTotal, perConnectionRate: nil, ttfbMilliseconds: 0),
            ideal: IdealModel(bytesPerSecond: Double(serverCapTotal), note: "the server's 5 MB/s"),
            timeoutSeconds: 60),
        Scenario(
            name: "limit-rate",
            summary: "64 MiB over loopback from the fixture server, no limits; every tool asked to keep to "
                + "8 MB/s (its own `--limit-rate`): a limit of the client's, shared by its connections, so "
                + "more connections cannot help. The time, and how many connections each tool opened.",
            size: 64 * mebibyte, quickSize: 8 * mebibyte,
            server: .fixture(totalRate: nil, perConnectionRate: nil, ttfbMilliseconds: 0),
            clientRate: clientLimit,
            ideal: IdealModel(bytesPerSecond: Double(clientLimit), note: "the 8 MB/s asked for"),
            timeoutSeconds: 60),
        Scenario(
            name: "silent",
            summary: "64 MiB over loopback from the fixture server, no limits; the first answer of each run "
                + "goes silent after 1 MiB and keeps its connection open (a server thread stuck, a dead "
                + "path): what one silent connection costs. Without it the file takes well under a second.",
            size: 64 * mebibyte, quickSize: 16 * mebibyte,
            server: .fixture(
                totalRate: nil, perConnectionRate: nil, ttfbMilliseconds: 0, stallAfter: 1 << 20),
            timeoutSeconds: 30),
        Scenario(
            name: "latency",
            summary: "64 MiB, fixture server: 50 ms before every response and 5 MB/s per connection, "
                + "standing for a long round trip (window ÷ RTT). Many small requests pay the delay each time.",
            size: 64 * mebibyte, quickSize: 4 * mebibyte,
            server: .fixture(
                totalRate: nil, perConnectionRate: latencyPerConnection, ttfbMilliseconds: latencyTTFB),
            ideal: IdealModel(
                bytesPerSecond: Double(16 * latencyPerConnection), latency: Double(latencyTTFB) / 1000,
                note: "16 connections × 5 MB/s, plus one 50 ms first byte"),
            timeoutSeconds: 90),
        Scenario(
            name: "many-files",
            summary: "500 files of 256 KiB from nginx through each tool's batch mode (a loop of single "
                + "downloads where a tool has none). Per-file overhead: process start, probe, connection setup.",
            workload: .manyFiles(count: 500, quickCount: 50),
            size: 256 * kibibyte, quickSize: 256 * kibibyte,
            server: .nginx(location: "plain", rate: .unlimited), timeoutSeconds: 300),
        Scenario(
            name: "small-files",
            summary: "300 files of 4–260 KiB from nginx through each tool's batch mode: what a model "
                + "repository or a release page looks like. Per-file cost: probe, requests, threads, syncs.",
            workload: .manyFiles(count: 300, quickCount: 50),
            size: 256 * kibibyte, quickSize: 256 * kibibyte,
            sizes: smallFileSizes(count: 300), quickSizes: smallFileSizes(count: 50),
            server: .nginx(location: "plain", rate: .unlimited), timeoutSeconds: 300),
        Scenario(
            name: "mixed",
            summary: "A batch of 4 files of 256 MiB and 300 files of 4–260 KiB from nginx: the large ones "
                + "must not wait behind the small ones, nor the small ones behind the large.",
            workload: .manyFiles(count: 304, quickCount: 52),
            size: 256 * mebibyte, quickSize: 16 * mebibyte,
            sizes: Array(repeating: 256 * mebibyte, count: 4) + smallFileSizes(count: 300),
            quickSizes: Array(repeating: 16 * mebibyte, count: 2) + smallFileSizes(count: 50),
            server: .nginx(location: "plain", rate: .unlimited), timeoutSeconds: 300),
        Scenario(
            name: "https",
            summary: "1 GiB over TLS from nginx (test CA from Fixtures/certs), no limits: TLS cost per byte.",
            size: gibibyte, quickSize: 64 * mebibyte,
            server: .nginx(location: "plain", rate: .unlimited), tls: true, timeoutSeconds: 240),
        Scenario(
            name: "resume",
            summary: "256 MiB, fixture server capped at 200 MB/s: SIGINT once the server has sent half, then "
                + "the same command again (with the tool's resume option). Bytes re-fetched and total time.",
            workload: .resume(killFraction: 0.5),
            size: 256 * mebibyte, quickSize: 32 * mebibyte,
            server: .fixture(totalRate: resumeTotal, perConnectionRate: nil, ttfbMilliseconds: 0),
            ideal: IdealModel(
                bytesPerSecond: Double(resumeTotal), note: "the 200 MB/s cap, as if never interrupted"),
            timeoutSeconds: 60),
        Scenario(
            name: "shaped-per-connection",
            summary: "256 MiB from nginx, the kernel shaping every connection to 5 MB/s (htb in a network "
                + "namespace): nothing else limits, so more connections pay all the way.",
            size: 256 * mebibyte, quickSize: 32 * mebibyte,
            server: .shapedNginx(.perConnection(shapedPerConnection)),
            ideal: IdealModel(
                bytesPerSecond: Double(64 * shapedPerConnection), note: "64 connections × 5 MB/s"),
            timeoutSeconds: 120),
        Scenario(
            name: "shaped-stragglers",
            summary: "256 MiB from nginx, the kernel shaping every connection to 20 MB/s and one in five "
                + "(by client port) to 1 MB/s.",
            size: 256 * mebibyte, quickSize: 32 * mebibyte,
            server: .shapedNginx(.stragglers(slowEvery: 5, slow: shapedSlow, fast: shapedFast)),
            ideal: IdealModel(
                bytesPerSecond: Double(13 * shapedFast + 3 * shapedSlow),
                note: "16 connections, 3 of them at 1 MB/s: 13 × 20 + 3 × 1 MB/s"),
            timeoutSeconds: 120),
        Scenario(
            name: "shaped-cap",
            summary: "256 MiB from nginx over a link the kernel caps at 50 MB/s for all connections (tbf): "
                + "more connections cannot help and only cost.",
            size: 256 * mebibyte, quickSize: 32 * mebibyte,
            server: .shapedNginx(.sharedCap(shapedCap)),
            ideal: IdealModel(bytesPerSecond: Double(shapedCap), note: "the 50 MB/s cap"),
            timeoutSeconds: 120),
        Scenario(
            name: "shaped-resume",
            summary:
                "256 MiB from nginx at 5 MB/s per connection (kernel-shaped): SIGINT after 0.6 s, then the "
                + "same command again. The rerun's rate against a fresh run's (shaped-per-connection).",
            workload: .resume(killFraction: 0.5),
            // Quick: 128 MiB and the interrupt after 0.2 s. The interrupt comes after a time, and the
            // default starts at the count an earlier run learned (64 here, after the
            // shaped-per-connection runs): 32 MiB, and then 128 MiB, finished within 0.6 s; 128 MiB
            // takes 0.42 s at the ideal rate.
            size: 256 * mebibyte, quickSize: 128 * mebibyte,
            server: .shapedNginx(.perConnection(shapedPerConnection)),
            ideal: IdealModel(
                bytesPerSecond: Double(64 * shapedPerConnection),
                note: "64 connections × 5 MB/s, as if never interrupted"),
            timeoutSeconds: 120, interruptAfterSeconds: 0.6, quickInterruptAfterSeconds: 0.2),
        Scenario(
            name: "mirrors",
            summary: "256 MiB from three mirrors (nginx on 127.0.0.1, .2 and .3 in a network namespace), the "
                + "kernel shaping each connection of A to 20 MB/s, of B to 5 MB/s, of C to 1 MB/s; each mirror "
                + "answers 503 beyond 4 connections from one client. The tools get all three URLs and the "
                + "SHA-256: spreading one file over sources of unequal speed.",
            workload: .severalSources,
            size: 256 * mebibyte, quickSize: 32 * mebibyte,
            server: .shapedMirrors(mirrors(corrupt: false)), ideal: mirrorsIdeal, timeoutSeconds: 120),
        Scenario(
            name: "mirrors-metalink",
            summary: "The same three mirrors from a Metalink file (priorities, size, SHA-256, SHA-1 of each "
                + "1 MiB piece); C, the 1 MB/s one, is listed first and serves byte 100000 flipped. Who "
                + "fetches only the bad piece again, from whom, and what it costs.",
            workload: .metalink,
            size: 256 * mebibyte, quickSize: 32 * mebibyte,
            server: .shapedMirrors(mirrors(corrupt: true)),
            ideal: IdealModel(
                bytesPerSecond: mirrorsIdeal.bytesPerSecond,
                note: "4 × (20 + 5 + 1) MB/s, as if no piece were bad"),
            timeoutSeconds: 120),
        Scenario(
            name: "sources-kinds",
            summary: "256 MiB from two sources of different kinds (nginx on 127.0.0.1 and .2 in a network "
                + "namespace): the kernel shapes each connection of A to 5 MB/s, and all connections of B "
                + "together to one 50 MB/s link (400 Mbit/s); no connection limits. The tools get both URLs "
                + "and the SHA-256: a shared source needs a few connections, a per-connection one all the "
                + "rest. Compare with sources-fast-alone.",
            workload: .severalSources,
            size: 256 * mebibyte, quickSize: 32 * mebibyte,
            server: .shapedMirrors(kindsOfSources), ideal: kindsIdeal, timeoutSeconds: 120),
        Scenario(
            name: "sources-kinds-shared-first",
            summary: "The same two sources with B, the shared link, named first: the order the sources come "
                + "in must not decide where the connections go.",
            workload: .severalSources,
            size: 256 * mebibyte, quickSize: 32 * mebibyte,
            server: .shapedMirrors(kindsOfSources.reversed()), ideal: kindsIdeal, timeoutSeconds: 120),
        Scenario(
            name: "sources-fast-alone",
            summary: "The same 256 MiB from A of sources-kinds alone (5 MB/s per connection): what the "
                + "faster source gives by itself.",
            size: 256 * mebibyte, quickSize: 32 * mebibyte,
            server: .shapedMirrors(Array(kindsOfSources.prefix(1))),
            ideal: IdealModel(
                bytesPerSecond: Double(64 * shapedPerConnection), note: "64 connections × 5 MB/s"),
            timeoutSeconds: 120),
        Scenario(
            name: "object-store",
            summary: "64 MiB from an S3 API (moto) by presigned URL; each GET costs about 0.1 s before its "
                + "first byte, so the number and size of requests decide.",
            size: 64 * mebibyte, quickSize: 16 * mebibyte,
            server: .objectStore, timeoutSeconds: 120),
    ]

    /// The scenario with this name.
    static func named(_ name: String) -> Scenario? { all.first { $0.name == name } }

    /// 1 GiB from nginx over loopback to `reader`, which takes it in order at its own pace: no tool
    /// may be slower than the pipe (compare with curl, which writes what it reads as it reads it).
    static func orderedScenario(_ name: String, _ reader: OrderedReader) -> Scenario {
        Scenario(
            name: name,
            summary: "1 GiB from nginx (sendfile) over loopback to \(reader.rawValue), which takes the bytes "
                + "in order" + (reader.keepsTheFile ? " (cat writes them to tmpfs)" : "")
                + ": parallel connections must hand the file over in order, never waiting on a timeout. "
                + "Tools that write only files they name are n/a.",
            size: gibibyte, quickSize: 64 * mebibyte,
            server: .nginx(location: "plain", rate: .unlimited), reader: reader, timeoutSeconds: 180)
    }
}
