import FastpullHTTP
import FastpullNet
import FoundationEssentials

/// What the engine needs of one download, and what it tells it back: the request (URL, destination,
/// configuration), the resources it shares with other downloads, and where its events go. The public
/// `Download` is one; the engine knows nothing else of the API above it.
package protocol DownloadJob: AnyObject, Sendable {
    /// The URL asked for.
    var url: URL { get }
    /// Where the verified file goes, and its path.
    var destination: URL { get }
    var destinationPath: String { get }
    var configuration: Configuration { get }
    /// The connections, per-host counts and threads it shares with the other downloads of its client.
    var resources: EngineResources { get }
    /// Stops right after the probe, leaving a ``Planned`` (``stopPlanned(_:)``).
    var planOnly: Bool { get }
    /// For a plan: probe with the file's first GET and keep its answer unread in the findings.
    var keepsProbeAnswer: Bool { get }
    /// Whether its caller looked at the destination just before and found nothing there (a batch
    /// deciding about existing files): the pipeline does not look again. True once at most (a run
    /// resumed later looks for itself).
    func takeDestinationSeenAbsent() -> Bool
    /// Kept-alive connections shared with the other files of a batch (nil: the client's).
    var sharedConnections: ConnectionCache? { get }
    /// Why the download stopped itself (too slow), when it did.
    var selfStopReason: FastpullError? { get }
    /// Tells the download's consumers.
    func emit(_ event: Event)
    /// The scheduler of the segmented fetch under way (for a completion map).
    func track(_ scheduler: Scheduler)
    /// What a probe of the URL found just before, once.
    func takeProbed() -> Probed?
    /// Leaves what a plan-only download's probe found; returns the error that stops the pipeline.
    func stopPlanned(_ result: Planned) -> PlanOnlyStop
}

/// The destination of a plan made without one (a batch's naming probe, `plan()` before a name is
/// known): nothing is written, and nothing on disk is looked up for it.
package enum PlanPlaceholder {
    package static let destination = URL(filePath: "/fastpull-plan", directoryHint: .notDirectory)
}

/// A probe's findings, to hand to a download of the same URL that follows at once.
package struct Probed: Sendable {
    package var remote: RemoteFile
    package var requestCost: Duration
    package var roundTrip: Duration
    /// The probe's GET, its body unread: the download's first answer (a small file's only one).
    package var answer: UnreadAnswer? = nil
}

/// What a plan-only download found: the plan, and the probe's findings behind it.
package struct Planned: Sendable {
    package var plan: Event.Plan
    package var probed: Probed
}

/// Thrown by a plan-only download right after its probe, once it has left its ``Planned``: it
/// carries nothing, so no connection travels inside an error.
package struct PlanOnlyStop: Error {
    package init() {}
}

/// What the downloads of one client share: a connection cache per kind of connection, the per-host
/// counts, a census of open connections, and the threads. Owned by `FastpullClient`, which shuts it
/// down.
package final class EngineResources: Sendable {
    package let threads: ThreadPool
    /// Connections to each host across every download of the client (``Configuration/Connections/maximumPerHost``).
    package let hosts = HostConnectionLimiter()
    /// The connections open to each host now, and the most at once.
    package let census = ConnectionCensus()
    /// The client's overall speed limit (0: none).
    package let overall = RateLimiter(bytesPerSecond: 0)

    /// The limit a new download's connections are paced under: the overall one once it is set (a
    /// download started while there is none runs unpaced by it, and shares connections freely).
    package var overallLimit: RateLimiter? { overall.bytesPerSecond > 0 ? overall : nil }

    private struct CacheKey: Hashable {
        var tls: TLSOptions
        var timeouts: Timeouts
        var addressing: Addressing
    }

    private struct State {
        var caches: [CacheKey: ConnectionCache] = [:]
        var shutDown = false
    }

    private let state = PlainMutex(State())

    package init(threads: ThreadPool) {
        self.threads = threads
    }

    /// The cache for connections made under `configuration`: its TLS options, timeouts and addressing.
    package func connections(for configuration: Configuration) -> ConnectionCache {
        connections(
            tls: configuration.tls.options,
            timeouts: Timeouts(connect: configuration.timeouts.connect, idle: configuration.timeouts.idle),
            addressing: configuration.request.addressing)
    }

    /// The cache for connections with `tls` options and `timeouts`, made on first use (closed for
    /// good at once after ``shutDown()``).
    package func connections(
        tls: TLSOptions, timeouts: Timeouts, addressing: Addressing = .standard
    ) -> ConnectionCache {
        state.withLock { state in
            let key = CacheKey(tls: tls, timeouts: timeouts, addressing: addressing)
            if let cache = state.caches[key] { return cache }
            let cache = ConnectionCache(tlsOptions: tls, timeouts: timeouts, addressing: addressing)
            if state.shutDown { cache.closeAll(forGood: true) }
            state.caches[key] = cache
            return cache
        }
    }

    /// Every connection cache made so far.
    package var caches: [ConnectionCache] { state.withLock { Array($0.caches.values) } }

    /// Closes every connection (those in use as they come back) and the threads; returns once the
    /// threads have ended.
    package func shutDown() async {
        let caches = state.withLock { state in
            state.shutDown = true
            return Array(state.caches.values)
        }
        for cache in caches { cache.closeAll(forGood: true) }
        threads.close()
        await threads.waitUntilEmpty()
    }
}
