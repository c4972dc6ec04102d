import FastpullHTTP
import FastpullNet
import FoundationEssentials
import Synchronization

/// The servers one file comes from: the URL asked for first, then its mirrors, each as its own probe
/// found the file (final URL, validators). Every connection is bound to one source at a time. Where
/// each source's count is its own (an automatic count, ``SourceCounts``), a connection that needs one
/// (new, or its source was dropped) takes the source with the most room in its allowance, and those
/// beyond a source's allowance move; with a fixed count, it takes the source where one more adds the
/// most, after every source that has none has been tried once. A source that fails, stalls
/// for good or sends bytes that do not verify is dropped while another is left; the last one is
/// never dropped (its failure is the download's).
///
/// Shared by the connections' threads and the control loop; every method is short and takes one lock.
package final class SourceSet: Sendable {
    /// One server of the file.
    struct Source: Sendable {
        var remote: RemoteFile
        /// Why it no longer serves, once dropped.
        var dropped: String?
        /// Bytes it delivered into the file.
        var bytes: Int64 = 0
        /// Bytes per second one of its connections delivers, smoothed over its requests; nil until one
        /// request has ended.
        var rate: Double?
        /// The best ``rate`` it showed: what one connection gets when few share it.
        var bestRate: Double?
        /// Pieces it wrote that did not verify.
        var badPieces = 0
        /// Requests that failed since the last one it answered in full.
        var failuresInARow = 0
        /// The most connections it takes from this client, once it refused one more (429 or 503, as
        /// a mirror that limits connections per client answers). It grows by one after twice as
        /// many answers in full as it allows (a refusal can be a moment's: the next one finds out).
        var capacity: Int?
        /// Answers in full since ``capacity`` was last set or raised.
        var servedSinceCapped = 0
        /// Refusals in a row of a connection that was its only one: a source that refuses even one
        /// connection refuses this client, not one connection too many.
        var loneRefusals = 0

        var hasRoom: Bool { isLive && workers.count < (capacity ?? .max) }
        /// The connections bound to it now.
        var workers: Set<Int> = []
        /// Its connections asked to end their windows soon and move (``SourceSet/surplusWorkers()``).
        var moving: Set<Int> = []
        /// How many connections it may hold, where each source's count is its own (``SourceCounts``);
        /// nil where the download has one count (a fixed one).
        var allowance: Int?

        /// Connections it may still take within its allowance (none without one).
        var allowanceRoom: Int {
            guard isLive, let allowance else { return 0 }
            return min(allowance, capacity ?? .max) - (workers.count - moving.count)
        }

        /// Connections it holds beyond its allowance (none without one).
        var overAllowance: Int {
            guard let allowance else { return 0 }
            return workers.count - moving.count - allowance
        }

        var isLive: Bool { dropped == nil }

        /// Whether its connections share one limit: their rate fell below ``sharedBelow`` of the
        /// best it showed as it got more. A source that limits each connection keeps its rate.
        var isShared: Bool {
            guard let rate, let bestRate else { return false }
            return rate < SourceSet.sharedBelow * bestRate
        }

        /// The connections a shared source needs: as many as carry what it delivers now at the
        /// best rate one of them showed, and one more, to see whether the limit moved. Unlimited for
        /// one whose limit is per connection.
        var need: Int {
            guard isShared, let rate, let bestRate, bestRate > 0 else { return .max }
            return Int((Double(workers.count) * rate / bestRate).rounded(.up)) + 1
        }

        /// What one more connection adds here: a connection's rate, or nothing on a shared source
        /// that holds what it needs; nil while unmeasured.
        var gain: Double? {
            guard let rate else { return nil }
            return isShared && workers.count >= need ? 0 : rate
        }
    }

    private let state: Mutex<[Source]>
    /// Mirror probes still under way, and the condition a connection waits on for one to end.
    private let pending = Atomic<Int>(0)
    private let probeEnded = Condition()
    /// The connections' bytes at the latest ``sample(_:at:)``.
    private let lastSample = Mutex<(at: ContinuousClock.Instant, bytes: [Int: Int64])>((.now, [:]))
    /// Connections waiting in ``bind(_:limit:)`` now (for tests).
    let waiting = Atomic<Int>(0)
    /// Connections a source gets before a new one waits for a mirror's probe rather than pile onto
    /// it (many mirrors allow a client about this many).
    static let connectionsBeforeWaiting = 4
    /// A source whose connections fell below this share of the best rate one of them showed is
    /// shared by them (``Source/isShared``): per-connection limits hold each one's rate within noise.
    static let sharedBelow = 2.0 / 3
    /// Refusals in a row of a source's only connection after which it is dropped (while another
    /// source serves): with ``refusalPause`` between them, a source that refused for a second and
    /// a half. (A mirror that turns away a client's first few requests serves the next.)
    static let loneRefusalsToDrop = 16
    /// Why a source that refused even a lone connection again and again is dropped.
    static let refusedEveryRequest =
        "it refused every request (429/503), \(loneRefusalsToDrop) times in a row with no other connection to it"
    /// How long a connection waits after a refusal before its next request: a source that refuses
    /// is asked again at most this often by each connection, not in a loop.
    static let refusalPause: Duration = .milliseconds(100)

    /// The sources in order: the URL asked for first.
    init(_ remotes: [RemoteFile]) {
        precondition(!remotes.isEmpty, "a download has at least one source")
        state = Mutex(remotes.map { Source(remote: $0) })
    }

    /// Adds a source (a mirror whose probe found the same file), or one that was never used, for the
    /// reason given (`dropped`); returns its index.
    @discardableResult
    func add(_ remote: RemoteFile, dropped: String? = nil) -> Int {
        state.withLock { sources in
            sources.append(Source(remote: remote, dropped: dropped))
            return sources.count - 1
        }
    }

    /// How many sources there are, dropped ones included.
    var count: Int { state.withLock { $0.count } }

    /// The sources as they are now.
    var snapshot: [Source] { state.withLock { $0 } }

    /// `count` mirrors are being probed; each calls ``endProbe()`` when it is done, joined or not.
    func expectProbes(_ count: Int) {
        pending.add(count, ordering: .releasing)
    }

    /// A mirror's probe ended; a connection waiting for one goes on.
    func endProbe() {
        pending.subtract(1, ordering: .releasing)
        probeEnded.lock()
        probeEnded.broadcast()
        probeEnded.unlock()
    }

    /// The source `worker` fetches its next window from (``bindNow(_:)``). While mirrors are still being
    /// probed, a new connection that would be one too many for a source (a mirror often refuses more
    /// than a few from one client) waits up to `limit` for a probe to end, on its own thread: the
    /// sources the probes add are the ones it should go to.
    func bind(_ worker: Int, limit: Duration = .seconds(1)) -> (index: Int, remote: RemoteFile) {
        let deadline = ContinuousClock.now + limit
        while pending.load(ordering: .acquiring) > 0, ContinuousClock.now < deadline,
            state.withLock({ sources in
                !sources.contains { $0.workers.contains(worker) }
                    && sources[Self.choose(sources)].workers.count >= Self.connectionsBeforeWaiting
            })
        {
            probeEnded.lock()
            waiting.add(1, ordering: .relaxed)
            if pending.load(ordering: .acquiring) > 0 { _ = probeEnded.wait(until: deadline) }
            waiting.subtract(1, ordering: .relaxed)
            probeEnded.unlock()
        }
        return bindNow(worker)
    }

    /// The source `worker` fetches its next window from: its own while that is live (unless a source
    /// nobody has tried yet appeared and its own has others, or its own is shared and holds more
    /// connections than it needs while another would gain from one), else the best live one
    /// (``choose(_:)``).
    func bindNow(_ worker: Int) -> (index: Int, remote: RemoteFile) {
        state.withLock { sources in
            if let current = sources.firstIndex(where: { $0.workers.contains(worker) }) {
                let untried = sources.contains {
                    $0.isLive && $0.rate == nil && $0.workers.isEmpty && $0.allowance == nil
                }
                let surplus =
                    if sources[current].allowance != nil {
                        sources[current].workers.count > sources[current].allowance!
                            && sources.indices.contains { $0 != current && sources[$0].allowanceRoom > 0 }
                    } else {
                        sources[current].isShared && sources[current].workers.count > sources[current].need
                            && sources.indices.contains {
                                $0 != current && sources[$0].hasRoom && (sources[$0].gain ?? 0) > 0
                            }
                    }
                sources[current].moving.remove(worker)
                if sources[current].isLive, !(untried && sources[current].workers.count > 1), !surplus {
                    return (current, sources[current].remote)
                }
                sources[current].workers.remove(worker)
            }
            let chosen = Self.choose(sources)
            sources[chosen].workers.insert(worker)
            return (chosen, sources[chosen].remote)
        }
    }

    /// Measures each source from its connections' bytes (`bytes`, by connection, as the scheduler
    /// counts them from the moment each joined) since the previous call, once 20 ms or more lie
    /// between the two: what one of its connections delivered per second. The download places its
    /// connections in its first tenth of a second; measured by whole answers alone (the first ended
    /// after half a second), half of 64 stayed that long on a shared 50 MB/s link.
    func sample(_ bytes: [Int: Int64], at now: ContinuousClock.Instant) {
        let previous = lastSample.withLock { last -> (at: ContinuousClock.Instant, bytes: [Int: Int64])? in
            if (now - last.at).seconds < 0.02 { return nil }
            defer { last = (now, bytes) }
            return last
        }
        guard let previous else { return }
        let seconds = (now - previous.at).seconds
        state.withLock { sources in
            for index in sources.indices where sources[index].isLive {
                let present = sources[index].workers.filter { bytes[$0] != nil }
                let delivered = present.reduce(Int64(0)) { $0 + bytes[$1]! - (previous.bytes[$1] ?? 0) }
                guard !present.isEmpty, delivered > 0 else { continue }
                Self.measure(&sources[index], Double(delivered) / seconds / Double(present.count))
            }
        }
    }

    /// A connection of `source` delivered `sample` bytes per second.
    private static func measure(_ source: inout Source, _ sample: Double) {
        let rate = source.rate.map { 0.5 * $0 + 0.5 * sample } ?? sample
        source.rate = rate
        source.bestRate = max(source.bestRate ?? 0, rate)
    }

    /// After `worker` was replaced for being far slower than its peers: it leaves its source when
    /// another live one delivers at least twice as much per connection, so that its next window goes
    /// there.
    func reconsider(_ worker: Int) {
        state.withLock { sources in
            guard let current = sources.firstIndex(where: { $0.workers.contains(worker) }),
                let rate = sources[current].rate
            else { return }
            let best = sources.filter(\.isLive).compactMap(\.rate).max() ?? 0
            if best >= 2 * rate { sources[current].workers.remove(worker) }
        }
    }

    /// Source `index` refused `worker`'s request (429 or 503): it takes no more connections than it
    /// has without this one. When another live source has room, the worker leaves it for that one and
    /// the call returns true. False when none has (the refusal is the download's, which then runs
    /// fewer connections). A refusal never counts towards dropping a source.
    func refused(_ index: Int, worker: Int) -> Bool {
        state.withLock { sources in
            let others = sources[index].workers.subtracting([worker]).count
            sources[index].capacity = max(1, min(sources[index].capacity ?? .max, others))
            sources[index].servedSinceCapped = 0
            // Refused with no other connection there, again and again: it refuses this client, and
            // is dropped while another source serves (kept, it took a request after each refusal).
            sources[index].loneRefusals = others == 0 ? sources[index].loneRefusals + 1 : 0
            if sources[index].loneRefusals >= Self.loneRefusalsToDrop,
                Self.drop(
                    index,
                    reason: Self.refusedEveryRequest,
                    in: &sources)
            {
                sources[index].workers.remove(worker)
                return true
            }
            guard sources.indices.contains(where: { $0 != index && sources[$0].hasRoom }) else {
                return false
            }
            sources[index].workers.remove(worker)
            return true
        }
    }

    /// Each source's allowance, by source, from its own count (``SourceCounts``).
    func allow(_ allowances: [Int: Int]) {
        state.withLock { sources in
            for index in sources.indices { sources[index].allowance = allowances[index] ?? 0 }
        }
    }

    /// What each source brought, for its own count (``SourceCounts``), from the bytes the table
    /// attributed to each (``SegmentTable/bytesBySource``).
    func readings(_ bytes: [Int: SegmentTable.SourceBytes]) -> [Int: SourceCounts.Reading] {
        state.withLock { sources in
            var readings: [Int: SourceCounts.Reading] = [:]
            for index in sources.indices {
                readings[index] = SourceCounts.Reading(
                    live: sources[index].isLive, bytes: bytes[index]?.total ?? 0,
                    perConnection: bytes[index]?.perConnection ?? [:], capacity: sources[index].capacity,
                    workers: sources[index].workers, rate: sources[index].rate,
                    need: sources[index].isShared ? sources[index].need : nil)
            }
            return readings
        }
    }

    /// Connections on a source beyond its allowance while another has room in its own, or, where the
    /// download has one count, on a shared source beyond what it needs (``Source/need``) while
    /// another source would gain from them: each is to end its window soon, and its next one goes
    /// where there is room or one more adds the most (``bindNow(_:)``). Each is named once.
    func surplusWorkers() -> [Int] {
        state.withLock { sources in
            var surplus: [Int] = []
            if sources.contains(where: { $0.allowance != nil }) {
                var room = sources.reduce(0) { $0 + max($1.allowanceRoom, 0) }
                for index in sources.indices where sources[index].isLive && room > 0 {
                    let extra = min(sources[index].overAllowance, room)
                    guard extra > 0 else { continue }
                    let leaving = sources[index].workers.subtracting(sources[index].moving).sorted()
                        .suffix(extra)
                    sources[index].moving.formUnion(leaving)
                    surplus += leaving
                    room -= extra
                }
                return surplus
            }
            for index in sources.indices where sources[index].isLive && sources[index].isShared {
                let others = sources.indices.contains {
                    $0 != index && sources[$0].hasRoom && (sources[$0].gain ?? 0) > 0
                }
                let extra = sources[index].workers.count - sources[index].moving.count - sources[index].need
                guard others, extra > 0 else { continue }
                let leaving = sources[index].workers.subtracting(sources[index].moving).sorted().suffix(extra)
                sources[index].moving.formUnion(leaving)
                surplus += leaving
            }
            return surplus
        }
    }

    /// Unbinds a connection that ends.
    func leave(_ worker: Int) {
        state.withLock { sources in
            for index in sources.indices {
                sources[index].workers.remove(worker)
                sources[index].moving.remove(worker)
            }
        }
    }

    /// The live source a connection should go to: one that nobody has tried yet (in order, so the URL
    /// asked for comes first), else the one where one more connection adds the most (``Source/gain``):
    /// a source that limits each connection adds a connection's rate, one whose connections share a
    /// limit adds nothing once it holds the few it needs. (Placed by the rate each connection gets
    /// instead, a shared 50 MB/s link kept ten connections at 5 MB/s each while a source giving each
    /// connection 5 MB/s of its own had room for them.)
    static func choose(_ sources: [Source]) -> Int {
        let live = sources.indices.filter { sources[$0].isLive }
        // The last source is never dropped, so one is always live.
        guard !live.isEmpty else { return 0 }
        // Sources that refused more connections get no more while another has room.
        let roomy = live.filter { sources[$0].hasRoom }
        return pick(among: roomy.isEmpty ? live : roomy, sources)
    }

    private static func pick(among live: [Int], _ sources: [Source]) -> Int {
        // Each source counted on its own: the one with the most room in its allowance.
        if let roomiest = live.max(by: { sources[$0].allowanceRoom < sources[$1].allowanceRoom }),
            sources[roomiest].allowanceRoom > 0
        {
            return roomiest
        }
        if let untried = live.first(where: { sources[$0].rate == nil && sources[$0].workers.isEmpty }) {
            return untried
        }
        return live.max { a, b in
            let rateA = sources[a].gain ?? .infinity
            let rateB = sources[b].gain ?? .infinity
            if rateA != rateB { return rateA < rateB }
            return sources[a].workers.count > sources[b].workers.count
        } ?? live[0]
    }

    /// A request to source `index` failed; returns how many have in a row (a request answered in
    /// full, ``served(_:bytes:seconds:complete:)``, ends the run).
    func failed(_ index: Int) -> Int {
        state.withLock { sources in
            sources[index].failuresInARow += 1
            return sources[index].failuresInARow
        }
    }

    /// One request of `worker`'s source ended: `bytes` delivered in `seconds`, the whole window
    /// when `complete`.
    func served(_ index: Int, bytes: Int64, seconds: Double, complete: Bool = false) {
        state.withLock { sources in
            if complete {
                sources[index].failuresInARow = 0
                sources[index].loneRefusals = 0
                if let capacity = sources[index].capacity {
                    sources[index].servedSinceCapped += 1
                    if sources[index].servedSinceCapped >= 2 * capacity {
                        sources[index].capacity = capacity + 1
                        sources[index].servedSinceCapped = 0
                    }
                }
            }
            guard bytes > 0 else { return }
            sources[index].bytes += bytes
            // Short answers say little about a rate: only those of a tenth of a second and more count.
            guard seconds >= 0.1 else { return }
            Self.measure(&sources[index], Double(bytes) / seconds)
        }
    }

    /// Drops source `index` for `reason`, unless it is the only live one. Returns whether it was
    /// dropped (false too when it was already).
    @discardableResult
    func drop(_ index: Int, reason: String) -> Bool {
        state.withLock { Self.drop(index, reason: reason, in: &$0) }
    }

    /// Marks `index` dropped for `reason` when it is live and another source is; whether it did.
    private static func drop(_ index: Int, reason: String, in sources: inout [Source]) -> Bool {
        guard sources.indices.contains(index), sources[index].isLive,
            sources.indices.contains(where: { $0 != index && sources[$0].isLive })
        else { return false }
        sources[index].dropped = reason
        return true
    }

    /// Counts a piece that did not verify against the sources that wrote it. A source that wrote the
    /// piece alone is dropped at once; one that shared it, at its second bad piece. Returns the
    /// sources dropped now, with the reason.
    func blame(_ indices: Set<Int>, piece: Range<Int64>) -> [(index: Int, reason: String)] {
        state.withLock { sources in
            var dropped: [(Int, String)] = []
            for index in indices.sorted() where sources.indices.contains(index) {
                sources[index].badPieces += 1
                guard indices.count == 1 || sources[index].badPieces >= 2 else { continue }
                let reason =
                    "it sent bytes \(piece.lowerBound)-\(piece.upperBound - 1) that do not match their piece hash"
                if Self.drop(index, reason: reason, in: &sources) { dropped.append((index, reason)) }
            }
            return dropped
        }
    }

    /// Sources whose bytes of a piece that failed differ from the same bytes once the piece
    /// verified: they sent the bad ones, and are dropped (while another source is left). Returns the
    /// sources dropped now, with the reason.
    func convict(_ guilty: [(index: Int, range: Range<Int64>)]) -> [(index: Int, reason: String)] {
        state.withLock { sources in
            var dropped: [(Int, String)] = []
            for (index, range) in guilty {
                let reason =
                    "it sent bytes \(range.lowerBound)-\(range.upperBound - 1) that differ from the ones that match their piece hash"
                if Self.drop(index, reason: reason, in: &sources) { dropped.append((index, reason)) }
            }
            return dropped
        }
    }

    /// The connections bound to a dropped source: the control loop stops their requests.
    func workersOnDroppedSources() -> [Int] {
        state.withLock { sources in sources.filter { !$0.isLive }.flatMap(\.workers) }
    }

    /// Whether source `index` still serves.
    func isLive(_ index: Int) -> Bool { state.withLock { $0[index].isLive } }

    /// How many sources still serve.
    var liveCount: Int { state.withLock { sources in sources.count { $0.isLive } } }
}
