import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import CLinux
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The state shared by a ``FixtureServer``, its listener thread and its connection threads: the open
/// sockets (so that `stop()` can shut them all down), statistics, per-key fault counters and the stop
/// signal that interrupts every wait.
///
/// Threads hold the core strongly and the public `FixtureServer` holds it too; the server's `deinit`
/// stops the core, the threads exit and release it, and the last release closes the stop pipe.
final class ServerCore: Sendable {
    /// Which per-key counter a fault consumes.
    enum Counter: Sendable {
        case status, drop, stall, version
    }

    private struct KeyCounters {
        var status = 0
        var drop = 0
        var stall = 0
        var version = 0
    }

    private struct Lifecycle {
        var stopped = false
        /// Accepted sockets not yet closed. Sockets are closed only while holding the lock, so `stop()`
        /// never shuts down a descriptor number that has been reused for something else.
        var open: Set<Int32> = []
        /// Connections accepted so far (the index of the last one, 1-based).
        var accepted = 0
        /// The most connections open at once since the start (or the last `resetStats()`).
        var peak = 0
    }

    let listenSocket: Int32
    let tls: TLSServerContext?
    let filesDirectory: String?
    let totalBucket: SharedTokenBucket?
    /// The `Authorization` value every request must carry, when the server asks for one.
    let authorization: String?
    let requestLog: (@Sendable (String) -> Void)?
    /// How long an HTTPS connection waits before its handshake is answered.
    let handshakeDelayNanoseconds: Int64

    /// Readable once `stop()` has run; every interruptible wait polls it.
    /// Readable once `stop()` has run; every interruptible wait polls it. One descriptor (an
    /// `eventfd`), not a pipe's two: a test process runs hundreds of servers at once, and one holding
    /// over 1,360 descriptors crashed spawning a child (Foundation's `Process` reads past the end of
    /// its listing of `/proc/self/fd` once that listing fills its buffer).
    private let stopReadEnd: Int32
    /// Where `stop()` writes (the same descriptor as ``stopReadEnd`` where it is an `eventfd`).
    private let stopWriteEnd: Int32
    private let lifecycle = Mutex(Lifecycle())
    private let statistics = Mutex(FixtureStats())
    private let counters = Mutex([String: KeyCounters]())
    private let threads = DispatchGroup()

    init(
        listenSocket: Int32, tls: TLSServerContext?, filesDirectory: String?, totalRate: Int?,
        authorization: String? = nil, requestLog: (@Sendable (String) -> Void)?,
        handshakeDelayNanoseconds: Int64 = 0
    ) throws(FixtureServerError) {
        #if os(Linux)
            let event = fp_eventfd_cloexec()
            guard event >= 0 else { throw .system(call: "eventfd", message: Syscalls.describeErrno()) }
            stopReadEnd = event
            stopWriteEnd = event
        #else
            var ends: [Int32] = [0, 0]
            guard pipe(&ends) == 0 else { throw .system(call: "pipe", message: Syscalls.describeErrno()) }
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            stopReadEnd = ends[0]
            stopWriteEnd = ends[1]
        #endif
        self.listenSocket = listenSocket
        self.tls = tls
        self.filesDirectory = filesDirectory
        self.totalBucket = totalRate.map { SharedTokenBucket(bytesPerSecond: $0) }
        self.authorization = authorization
        self.requestLog = requestLog
        self.handshakeDelayNanoseconds = handshakeDelayNanoseconds
    }

    deinit {
        close(stopReadEnd)
        if stopWriteEnd != stopReadEnd { close(stopWriteEnd) }
    }

    // MARK: Threads

    /// Starts the listener thread.
    func start() {
        threads.enter()
        let thread = Thread { [self] in
            Listener.acceptLoop(self)
            close(listenSocket)
            threads.leave()
        }
        thread.name = "fixture-listener"
        thread.start()
    }

    /// Takes ownership of an accepted socket and serves it on a new thread (or closes it if the server
    /// is stopping).
    func serve(socket: Int32, peer: String) {
        let index: Int? = lifecycle.withLock { state in
            guard !state.stopped else { return nil }
            state.accepted += 1
            state.open.insert(socket)
            state.peak = max(state.peak, state.open.count)
            return state.accepted
        }
        guard let index else {
            close(socket)
            return
        }
        threads.enter()
        let thread = Thread { [self] in
            Connection(core: self, socket: socket, index: index, peer: peer).run()
            lifecycle.withLock { state in
                state.open.remove(socket)
                shutdown(socket, Int32(SHUT_RDWR))
                close(socket)
            }
            threads.leave()
        }
        thread.name = "fixture-connection-\(index)"
        thread.start()
    }

    /// Stops accepting, shuts down every open connection (stalled, sleeping or mid-transfer) and waits
    /// (up to ten seconds) for all threads to finish. Idempotent.
    func stop() {
        let first = lifecycle.withLock { state in
            guard !state.stopped else { return false }
            state.stopped = true
            for socket in state.open { shutdown(socket, Int32(SHUT_RDWR)) }
            return true
        }
        guard first else { return }
        // An eventfd takes an 8-byte count; a pipe any byte.
        var one: UInt64 = 1
        _ = write(stopWriteEnd, &one, MemoryLayout<UInt64>.size)
        _ = threads.wait(timeout: .now() + .seconds(10))
    }

    var isStopped: Bool { lifecycle.withLock { $0.stopped } }

    // MARK: Interruptible waits

    /// Sleeps for `nanoseconds` unless the server stops first; returns false if it stopped.
    func pause(nanoseconds: Int64) -> Bool {
        guard nanoseconds > 0 else { return !isStopped }
        var fds = [pollfd(fd: stopReadEnd, events: 0, revents: 0)]
        return Syscalls.pollReadable(&fds, timeoutNanoseconds: nanoseconds) == 0
    }

    /// Waits until the server stops or the peer closes `socket` (reading and discarding whatever it
    /// sends): how a stalled response keeps its connection open.
    func holdOpen(socket: Int32) {
        var scratch = [UInt8](repeating: 0, count: 4096)
        while true {
            var fds = [
                pollfd(fd: stopReadEnd, events: 0, revents: 0), pollfd(fd: socket, events: 0, revents: 0),
            ]
            let ready = Syscalls.pollReadable(&fds, timeoutNanoseconds: nil)
            if ready < 0 || fds[0].revents != 0 { return }
            if fds[1].revents != 0 {
                let count = scratch.withUnsafeMutableBytes { Syscalls.receive(socket, into: $0) }
                if count <= 0 { return }
            }
        }
    }

    /// Waits until `socket` is readable or the server stops; true if there is something to read.
    /// Used by the listener before `accept`.
    func waitReadable(socket: Int32) -> Bool {
        var fds = [pollfd(fd: stopReadEnd, events: 0, revents: 0), pollfd(fd: socket, events: 0, revents: 0)]
        let ready = Syscalls.pollReadable(&fds, timeoutNanoseconds: nil)
        return ready > 0 && fds[0].revents == 0 && fds[1].revents != 0
    }

    // MARK: Statistics

    var stats: FixtureStats { statistics.withLock { $0 } }

    func resetStats() {
        statistics.withLock { $0 = FixtureStats() }
        lifecycle.withLock { $0.peak = $0.open.count }
    }

    /// Forgets how often each fault was applied: the next responses get them again.
    func resetFaults() {
        counters.withLock { $0 = [:] }
    }

    /// The most connections that were open at once (accepted, and not yet seen closed) since the
    /// start or the last `resetStats()`.
    var peakOpenConnections: Int { lifecycle.withLock { $0.peak } }

    /// The connections open now (accepted, and not yet seen closed).
    var openConnections: Int { lifecycle.withLock { $0.open.count } }

    /// Counts a request; `newConnection` also counts its connection (its first counted request).
    func countRequest(newConnection: Bool) {
        statistics.withLock { stats in
            stats.requests += 1
            if newConnection { stats.connections += 1 }
        }
    }

    func countBodyBytes(_ count: Int) {
        guard count > 0 else { return }
        statistics.withLock { $0.bodyBytesSent += Int64(count) }
    }

    // MARK: Per-key fault counters

    /// Counts one more request of `key` for `counter` and returns how many came before it.
    func next(_ counter: Counter, key: String) -> Int {
        counters.withLock { all in
            var entry = all[key] ?? KeyCounters()
            let used: Int
            switch counter {
            case .status: used = entry.status
            case .drop: used = entry.drop
            case .stall: used = entry.stall
            case .version: used = entry.version
            }
            switch counter {
            case .status: entry.status += 1
            case .drop: entry.drop += 1
            case .stall: entry.stall += 1
            case .version: entry.version += 1
            }
            all[key] = entry
            return used
        }
    }

    /// Consumes one use of `counter` for `key` if fewer than `limit` were used (nil: no limit, always
    /// true). Returns whether the fault applies to this response.
    func take(_ counter: Counter, key: String, limit: Int?) -> Bool {
        counters.withLock { all in
            var entry = all[key] ?? KeyCounters()
            let used: Int
            switch counter {
            case .status: used = entry.status
            case .drop: used = entry.drop
            case .stall: used = entry.stall
            case .version: used = entry.version
            }
            if let limit, used >= limit { return false }
            switch counter {
            case .status: entry.status += 1
            case .drop: entry.drop += 1
            case .stall: entry.stall += 1
            case .version: entry.version += 1
            }
            all[key] = entry
            return true
        }
    }
}
