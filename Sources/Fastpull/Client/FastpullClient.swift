import FastpullHTTP
import FastpullNet
import FoundationEssentials
import Synchronization

/// What the downloads of a program share: kept-alive connections and TLS contexts, the per-host
/// connection count, and the threads that connections and control loops run on. Hold one across the
/// phases of a build, or for the life of a download manager, and shut it down at the end; or use
/// ``shared``, which the free functions (``download(from:to:configuration:)``) use.
///
/// ```swift
/// let client = FastpullClient()
/// let report = try await client.download(from: url, to: fileURL)
/// await client.shutdown()
/// ```
///
/// A ``Download`` or ``Batch`` made with `client:` runs through it too.
///
/// Every download through one client counts its connections against one per-host limit
/// (``Configuration/Connections/maximumPerHost``), finds the connections an earlier download left
/// open, and runs on threads kept from earlier work. ``shutdown()`` stops what runs (each download
/// ends ``FastpullError/Code/interrupted``, its progress saved to resume), closes every connection,
/// and returns once the client's threads have ended.
public final class FastpullClient: Sendable {
    /// The client of the free functions, of ``Download`` and ``Batch`` made without one, and of the
    /// command line. Never shut down.
    public static let shared = FastpullClient(threads: .standard)

    /// What its downloads share: connection caches, per-host counts, a census, threads.
    let resources: EngineResources
    /// Threads for blocking work: connections, control loops, hashing.
    var threads: ThreadPool { resources.threads }
    /// The per-host connection count.
    var hosts: HostConnectionLimiter { resources.hosts }
    /// The connections open to each host now, whoever holds them.
    var census: ConnectionCensus { resources.census }

    private struct State {
        /// What runs now, by ticket: each stops when told to.
        var running: [Int: @Sendable () -> Void] = [:]
        var nextTicket = 0
        var shutDown = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = PlainMutex(State())

    /// A client of its own: its connections, per-host counts and threads are shared with no other.
    public convenience init() {
        self.init(threads: ThreadPool())
    }

    init(threads: ThreadPool) {
        resources = EngineResources(threads: threads)
    }

    /// Downloads `url` to `file` through this client (see ``Fastpull/download(from:to:configuration:)``).
    public func download(from url: URL, to file: URL, configuration: Configuration = .init())
        async throws(FastpullError) -> Report
    {
        try await Download(from: url, to: file, configuration: configuration, client: self).run()
    }

    /// Downloads `items` through this client (see ``Fastpull/download(_:configuration:options:)``).
    public func download(
        _ items: [BatchItem], configuration: Configuration = .init(), options: BatchOptions = .init()
    ) async -> [BatchOutcome] {
        await Batch(items, configuration: configuration, options: options, client: self).run()
    }

    /// The most bytes per second all of this client's downloads receive together; nil (the default)
    /// for no limit. A change applies at once to the downloads started under a limit; those started
    /// while there was none run unpaced by it until they start again.
    public var maximumBytesPerSecond: Int64? {
        get {
            let rate = resources.overall.bytesPerSecond
            return rate > 0 ? rate : nil
        }
        set { resources.overall.setRate(max(newValue ?? 0, 0)) }
    }

    /// Whether ``shutdown()`` has been called: downloads started from then on fail at once.
    public var isShutDown: Bool { state.withLock { $0.shutDown } }

    /// Stops every download running through this client (each ends
    /// ``FastpullError/Code/interrupted``, its progress saved, so the same download resumes later,
    /// through another client or another process), closes every connection, and returns once the
    /// client's threads have ended. Downloads started afterwards fail with
    /// ``FastpullError/Code/usage``. Idempotent. The ``shared`` client cannot be shut down: this does
    /// nothing there.
    public func shutdown() async {
        guard self !== Self.shared else { return }
        let stops = state.withLock { state in
            state.shutDown = true
            return Array(state.running.values)
        }
        for stop in stops { stop() }
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state in
                guard !state.running.isEmpty else { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
        await resources.shutDown()
    }

    /// Every connection cache made so far (one per kind of connection).
    var caches: [ConnectionCache] { resources.caches }

    /// Counts a piece of work as running until ``leave(_:)``; `stop` is called if the client shuts
    /// down meanwhile. Throws once the client is shut down.
    func enter(_ what: URL, stop: @escaping @Sendable () -> Void) throws(FastpullError) -> Int {
        let ticket = state.withLock { state -> Int? in
            guard !state.shutDown else { return nil }
            defer { state.nextTicket += 1 }
            state.running[state.nextTicket] = stop
            return state.nextTicket
        }
        guard let ticket else {
            throw FastpullError(
                .usage, "\(what.redactedForDisplay) was not started: its FastpullClient has been shut down")
        }
        return ticket
    }

    /// Runs `body` in a task of its own, counted as running (``enter(_:stop:)``) and cancelled if the
    /// client shuts down meanwhile; cancelling the caller cancels it too.
    func running<T: Sendable>(_ what: URL, _ body: @escaping @Sendable () async throws -> T) async throws -> T
    {
        let handle = PlainMutex<(task: Task<T, any Error>?, stopped: Bool)>((nil, false))
        let ticket = try enter(what) {
            handle.withLock { handle in
                handle.stopped = true
                return handle.task
            }?.cancel()
        }
        defer { leave(ticket) }
        // In a batch lane the task starts on the lane's thread, where its work runs (a start on the
        // shared pool and a hop back cost two thread hand-offs per file).
        let task = Task(executorPreference: ExecutorSet.laneThread) { try await body() }
        let stopped = handle.withLock { handle in
            handle.task = task
            return handle.stopped
        }
        if stopped { task.cancel() }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    /// Ends what ``enter(_:stop:)`` counted.
    func leave(_ ticket: Int) {
        let waiters = state.withLock { state in
            state.running[ticket] = nil
            guard state.running.isEmpty else { return [CheckedContinuation<Void, Never>]() }
            defer { state.idleWaiters.removeAll() }
            return state.idleWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// How many downloads (and plans) run through this client now.
    var runningCount: Int { state.withLock { $0.running.count } }
}
