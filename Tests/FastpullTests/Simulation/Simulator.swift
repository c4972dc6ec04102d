import FoundationEssentials

@testable import Fastpull
@testable import FastpullEngine

/// A deterministic discrete-time model of a segmented download: a virtual clock advancing in steps of
/// a millisecond drives the real ``SegmentTable``, ``FetchLoop`` and ``ConnectionController`` (no
/// sockets, no threads) against a ``LinkModel``. Each simulated connection behaves as a
/// ``SegmentFetcher`` does: it connects, asks the table for a window, sends the request, receives the
/// window at the rate the model allows (claiming and committing bytes as they come, stopping where a
/// cut moved its end), and asks again, or has asked already: it sends its next request on the same
/// connection before its answer ends (``SegmentTable/aheadLead(for:)``), and that answer's first byte
/// comes a request's cost after it was sent or right after the current answer, whichever is later
/// (the server answers one request of a connection after the other); the loop looks as often as the real one does
/// (``ConnectionController/tickInterval``).
struct Simulator {
    /// How the download chose its connections.
    enum Mode: Sendable {
        /// `auto` under the measured rules (``ConnectionController``).
        case automatic
        /// `auto` under the stated model (``ConnectionPolicy``).
        case model
        case fixed(Int)
    }

    /// What a run did.
    struct Result: Sendable, CustomStringConvertible {
        var seconds: Double
        /// When the last byte was written (the rest is the hash catching up).
        var transferSeconds: Double
        var requests: Int
        var peakConnections: Int
        /// Bytes the server sent that were never written (cut windows, evicted connections).
        var wasted: Int64
        var finished: Bool
        /// The most connections each source was allowed at once, and how many at the end, by source
        /// (several sources counted each on its own only).
        var peakBySource: [Int: Int] = [:]
        var finalBySource: [Int: Int] = [:]

        var description: String {
            "\(String(format: "%.2f", seconds)) s (last byte \(String(format: "%.2f", transferSeconds))), \(requests) requests, peak \(peakConnections) connections, "
                + "\(wasted) bytes wasted\(finished ? "" : ", DID NOT FINISH")"
        }
    }

    private enum Phase {
        /// Opening the connection until this time.
        case connecting(until: Double)
        /// Ready for a request.
        case idle
        /// A request for `window` is out; its first byte comes at `firstByte`.
        case waiting(window: Range<Int64>, sentAt: Double, firstByte: Double)
        /// Receiving `window`, at `offset` now.
        case receiving(window: Range<Int64>, offset: Int64, startedAt: Double, sent: Double)
        /// Told to wait for the horizon (not used without one) or retiring: nothing to do.
        case done
    }

    private struct Connection {
        var index: Int
        var phase: Phase
        /// TCP's congestion window, in bytes.
        var window: Double
        var partial: Double = 0
        var retiring = false
        var lastGrowth: Double
        /// The request for its next window, sent before its current answer ended, and when.
        var ahead: (window: SegmentTable.Window, sentAt: Double)?
        /// Whether its current request went ahead.
        var pipelined = false
        /// Where its current answer is when the request for its next window goes (looked for when the
        /// answer starts and every 256 KiB while there is none, as the fetcher does), and where it is
        /// looked for next.
        var aheadAt: Int64?
        var nextLook: Int64?
        /// The source it fetches from, of several.
        var source: Int?
    }

    let model: LinkModel
    let mode: Mode
    /// The clock's step: a millisecond, or a tenth of the round trip where that is longer (5 ms at most).
    var tick: Double { min(max(model.roundTrip / 10, 0.001), 0.005) }
    var timeLimit = 600.0
    /// Prints every change of the connection count (for looking into a model).
    var traced = false

    func run() -> Result {
        let origin = ContinuousClock.now
        func instant(_ time: Double) -> ContinuousClock.Instant { origin + .nanoseconds(Int64(time * 1e9)) }

        let kept = Int64(Double(model.size) * model.keptShare)
        let plan = Planner.plan(size: model.size, connections: 64, minimumSegmentSize: 1 << 20)
        var segments = plan.segments
        if kept > 0 {
            // A resume: the first `kept` bytes are in place.
            segments = segments.map { segment in
                var segment = segment
                segment.written = max(0, min(segment.length, kept - segment.start))
                return segment
            }
        }
        var settings = SegmentTable.Settings()
        settings.rateSample = .milliseconds(100)
        settings.slowGrace = .milliseconds(Int64(min(max(model.roundTrip * 12, 0.3), 2) * 1000))
        settings.roundTrip = .nanoseconds(Int64(model.roundTrip * 1e9))
        var table = SegmentTable(segments: segments, settings: settings)
        let roundTrip = Duration.nanoseconds(Int64(model.roundTrip * 1e9))
        // Several sources: bound as the download binds them (``SourceSet``), each counted on its own
        // under the model (``SourceCounts``).
        let sourceSet = model.sources.map { models in
            SourceSet(
                models.map { source in
                    let url = URL(string: "http://\(source.name.filter(\.isLetter))/file")!
                    return RemoteFile(
                        url: url, finalURL: url, size: model.size, acceptsRanges: true, etag: nil,
                        lastModified: nil)
                })
        }
        var loop: FetchLoop
        switch mode {
        case .automatic, .model:
            // What a probe would have seen: a connection's setup, and a request's wait.
            let wait = Duration.nanoseconds(Int64((model.roundTrip + model.serverCost) * 1e9))
            var settings = ConnectionController.Settings(
                roundTrip: roundTrip, requestCost: wait, cores: model.cores)
            if case .model = mode {
                loop =
                    sourceSet == nil
                    ? FetchLoop(controller: ConnectionController(modelUpTo: 64, settings: settings))
                    : FetchLoop(
                        perSource: SourceCounts(ceiling: 64, settings: settings),
                        measuring: ConnectionController(fixed: 64))
            } else {
                // The rules count the download as one, starting with a few for each source.
                if let count = model.sources?.count, count > 1 {
                    settings.initial = max(settings.initial, SourceSet.connectionsBeforeWaiting * count)
                }
                loop = FetchLoop(controller: ConnectionController(automaticUpTo: 64, settings: settings))
            }
        case .fixed(let count):
            loop = FetchLoop(controller: ConnectionController(fixed: count))
        }
        // By worker number (they count up from 0); nil once a worker has gone.
        var connections: [Connection?] = []
        var opened = 0
        var requests = 0
        var sent: Double = 0
        var cpu = 0.0
        var now = 0.0
        let initialWritten = table.writtenBytes

        func situation(stalled: [Int] = []) -> FetchLoop.Situation {
            let openings = table.openings(now: instant(now))
            return FetchLoop.Situation(
                sample: .init(
                    now: instant(now), bytes: table.writtenBytes - initialWritten, cpuSeconds: cpu,
                    perConnection: table.connections.mapValues(\.bytes),
                    requestCost: table.speeds.typicalRequestCost,
                    remaining: model.size - table.writtenBytes),
                hasWork: openings > 0, openings: openings, isComplete: table.isComplete, stalled: stalled,
                sources: loop.perSource == nil ? nil : sourceSet?.readings(table.bytesBySource))
        }

        func apply(_ actions: [FetchLoop.Action]) {
            defer {
                table.settings = SegmentTable.tuned(table.settings, to: loop.tuning)
                if let allowances = loop.perSource?.allowances { sourceSet?.allow(allowances) }
            }
            for action in actions {
                switch action {
                case .spawn(let worker):
                    while connections.count <= worker { connections.append(nil) }
                    connections[worker] = Connection(
                        index: opened, phase: .connecting(until: now + model.roundTrip), window: 14_480,
                        lastGrowth: now)
                    opened += 1
                    table.join(worker, now: instant(now))
                case .retire(let worker):
                    if worker < connections.count { connections[worker]?.retiring = true }
                    table.release(worker)
                case .evict(let worker):
                    // The socket closes; the connection reconnects on a new one, from slow start.
                    if worker < connections.count, var connection = connections[worker] {
                        connection.phase = .connecting(until: now + model.roundTrip)
                        connection.window = 14_480
                        connection.index = opened
                        connection.ahead = nil
                        opened += 1
                        connections[worker] = connection
                    }
                case .connections, .warn:
                    break
                case .fail:
                    now = timeLimit
                }
            }
        }

        apply(loop.start(situation()))
        var nextLoop = loop.tickInterval.seconds
        var peakBySource: [Int: Int] = [:]
        var hashed = 0.0
        var lastPrint = 0.0
        var lastByte: Double?
        while now < timeLimit, hashed < Double(model.size) {
            if lastByte == nil, table.isComplete { lastByte = now }
            now += tick
            // The hash follows the contiguous prefix at its own speed (a resume rehashes the kept part).
            hashed = min(hashed + model.hashRate * tick, Double(table.frontier))
            // Every connection that is ready asks for work, as a fetcher does between windows.
            for worker in connections.indices {
                guard var connection = connections[worker] else { continue }
                switch connection.phase {
                case .connecting(let until) where now >= until:
                    connection.phase = .idle
                    connections[worker] = connection
                    fallthrough
                case .idle:
                    if connection.retiring {
                        table.leave(worker)
                        sourceSet?.leave(worker)
                        connections[worker] = nil
                        if traced { print(String(format: "  %.3f s", now), "worker \(worker) retired") }
                        apply(loop.ended(worker, .retired, situation()))
                        continue
                    }
                    if let ahead = connection.ahead {
                        connection.ahead = nil
                        if table.takeAhead(worker, ahead.window, now: instant(now)) {
                            connection.phase = .waiting(
                                window: ahead.window.range, sentAt: ahead.sentAt,
                                firstByte: max(now, ahead.sentAt + model.roundTrip) + model.serverCost)
                            connection.pipelined = true
                            connections[worker] = connection
                            continue
                        }
                        // Its window was taken meanwhile: the connection closes and opens anew.
                        connection.phase = .connecting(until: now + model.roundTrip)
                        connection.window = 14_480
                        connection.index = opened
                        opened += 1
                        connections[worker] = connection
                        continue
                    }
                    if !table.isComplete, let (window, _) = table.nextWindow(for: worker, now: instant(now)) {
                        requests += 1
                        connection.pipelined = false
                        // Another source than the last: a new connection to it first.
                        var setup = 0.0
                        if let sourceSet {
                            let bound = sourceSet.bindNow(worker).index
                            table.setGroup(worker, bound)
                            if connection.source != nil, connection.source != bound {
                                setup = model.roundTrip
                                connection.window = 14_480
                            }
                            connection.source = bound
                        }
                        connection.phase = .waiting(
                            window: window.range, sentAt: now,
                            firstByte: now + setup + model.roundTrip + model.serverCost)
                        connections[worker] = connection
                    } else {
                        table.leave(worker)
                        sourceSet?.leave(worker)
                        connections[worker] = nil
                        apply(loop.ended(worker, .finished, situation()))
                    }
                case .waiting(let window, let sentAt, let firstByte) where now >= firstByte:
                    // An answer that waited behind the one before it shows no request's cost.
                    if !connection.pipelined {
                        table.recordFirstByte(worker, after: .nanoseconds(Int64((now - sentAt) * 1e9)))
                    }
                    connection.phase = .receiving(
                        window: window, offset: window.lowerBound, startedAt: now, sent: 0)
                    connection.aheadAt = nil
                    connection.nextLook = window.lowerBound
                    connections[worker] = connection
                default:
                    break
                }
            }

            // What each receiving connection may get this tick.
            var wanted = [Double](repeating: 0, count: connections.count)
            var open = 0
            for worker in connections.indices {
                guard let connection = connections[worker] else { continue }
                open += 1
                guard case .receiving(_, _, let startedAt, let sentSoFar) = connection.phase else { continue }
                var rate = model.perConnection(connection.index, now)
                if let source = connection.source, let sources = model.sources {
                    rate = min(rate, sources[source].perConnection(connection.index, now))
                }
                if model.burstsPerRequest(connection.index) {
                    let allowance = rate * (now - startedAt + 1) - sentSoFar
                    rate = max(0, allowance / tick)
                }
                if model.slowStart { rate = min(rate, connection.window / model.roundTrip) }
                wanted[worker] = rate * tick
            }
            // Each source's shared cap holds its own connections' share first.
            if let sources = model.sources {
                for (index, source) in sources.enumerated() where source.sharedCap.isFinite {
                    let mine = wanted.indices.filter { connections[$0]?.source == index && wanted[$0] > 0 }
                    let sum = mine.reduce(0) { $0 + wanted[$1] }
                    let cap = source.sharedCap * tick
                    if sum > cap { for worker in mine { wanted[worker] *= cap / sum } }
                }
            }
            let total = wanted.reduce(0, +)
            let cap = min(model.sharedCap, model.clientCapacity(open)) * tick
            let scale = total > cap ? cap / total : 1
            let cpuShare = model.cpuPerByte * model.clientCapacity(1) / model.clientCapacity(open)
            for worker in wanted.indices where wanted[worker] > 0 {
                let amount = wanted[worker]
                guard var connection = connections[worker],
                    case .receiving(let window, var offset, let startedAt, var sentSoFar) = connection.phase
                else { continue }
                let bytes = amount * scale
                connection.partial += bytes
                var count = Int64(connection.partial)
                connection.partial -= Double(count)
                count = min(count, window.upperBound - offset)
                sent += Double(count)
                sentSoFar += Double(count)
                let allowed = table.claim(worker, count: count)
                if allowed > 0 {
                    table.commit(worker, count: allowed, now: instant(now))
                    // Each connection costs the CPU a little: at the client's capacity every core is busy.
                    cpu += Double(allowed) * cpuShare
                }
                offset += allowed
                // Slow start: the window doubles every round trip while the connection is held back by it.
                if now - connection.lastGrowth >= model.roundTrip {
                    connection.lastGrowth = now
                    if bytes >= connection.window / model.roundTrip * tick * 0.9 { connection.window *= 2 }
                }
                if connection.aheadAt == nil, let look = connection.nextLook, offset >= look {
                    connection.aheadAt = table.aheadLead(for: worker).map { window.upperBound - $0 }
                    connection.nextLook =
                        connection.aheadAt == nil ? offset + SegmentFetcher.aheadLookStep : nil
                }
                if allowed == count, let aheadAt = connection.aheadAt, offset >= aheadAt {
                    connection.aheadAt = nil
                    if !connection.retiring, offset < window.upperBound,
                        let next = table.windowAhead(for: worker)
                    {
                        requests += 1
                        connection.ahead = (next, now)
                    }
                }
                if allowed < count {
                    // Cut: the rest of the window is not this connection's. A small rest is read and
                    // dropped (unless a request went ahead); otherwise the connection closes and opens
                    // again.
                    let rest = window.upperBound - offset
                    if rest > 256 << 10 || connection.ahead != nil {
                        connection.ahead = nil
                        connection.phase = .connecting(until: now + model.roundTrip)
                        connection.window = 14_480
                        connection.index = opened
                        opened += 1
                    } else {
                        connection.phase = .idle
                    }
                } else if offset >= window.upperBound {
                    connection.phase = .idle
                } else {
                    connection.phase = .receiving(
                        window: window, offset: offset, startedAt: startedAt, sent: sentSoFar)
                }
                connections[worker] = connection
            }

            if now >= nextLoop {
                nextLoop += loop.tickInterval.seconds
                let stalled = table.stalledConnections(now: instant(now))
                let before = loop.target
                if let sourceSet {
                    sourceSet.sample(table.connections.mapValues(\.bytes), at: instant(now))
                    for worker in sourceSet.surplusWorkers() { table.release(worker) }
                }
                apply(loop.tick(situation(stalled: stalled)))
                for (source, allowance) in loop.perSource?.allowances ?? [:] {
                    peakBySource[source] = max(peakBySource[source] ?? 0, allowance)
                }
                if traced, now - lastPrint >= 0.1 {
                    lastPrint = now
                    print(
                        String(format: "  %.3f s", now), "frontier \(table.frontier >> 20) MiB",
                        "hashed \(Int64(hashed) >> 20) MiB", "written \(table.writtenBytes >> 20) MiB",
                        "pieces \(table.pieces.count)",
                        "frontier piece owner \(table.pieces.first { !$0.segment.isComplete }.map { "\($0.owner.map(String.init) ?? "none") rate \(Int(($0.owner.flatMap { table.connections[$0]?.rate } ?? 0) / 1000)) kB/s, unclaimed \($0.unclaimed >> 10) KiB" } ?? "-")"
                    )
                }
                if traced, loop.target != before || !stalled.isEmpty {
                    print(
                        String(format: "  %.3f s", now), "\(before) → \(loop.target)",
                        loop.reasonText,
                        "phase \(loop.controller.model.map { "\($0.state)" } ?? "\(loop.controller.phase)")",
                        stalled.isEmpty ? "" : "evicted \(stalled)",
                        "written \(table.writtenBytes >> 20) MiB",
                        loop.controller.model?.decision.evidence.map { "| \($0)" } ?? "")
                }
            }
        }
        let written = table.writtenBytes - initialWritten
        return Result(
            seconds: now, transferSeconds: lastByte ?? now, requests: requests, peakConnections: loop.peak,
            wasted: Int64(sent) - written, finished: table.isComplete, peakBySource: peakBySource,
            finalBySource: loop.perSource?.allowances ?? [:])
    }
}
