import Fastpull
import FastpullEngine
import FoundationEssentials
import Synchronization

/// Runs the downloads of a ``DownloadList`` through one `FastpullClient`: at most
/// ``maximumActive`` at once, the first waiting one whenever a place frees. The list is the truth:
/// every change is written there first, and the transfers follow it — a pause is `paused` in the list
/// when ``pause(_:)`` returns, while its transfer stops (its journal saved) in the background.
///
/// A download that ends updates its item: `complete` (verified), or `error` with the reason, unless
/// the user paused or removed it meanwhile (then the stop was theirs, not a failure).
public final class DownloadQueue: Sendable {
    /// The list the queue runs.
    public let list: DownloadList
    private let client: FastpullClient

    fileprivate struct Running {
        var batch: Batch
        var task: Task<Void, Never>
        /// Which launch this is, so that a transfer's end removes its own entry only.
        var launch: Int
        /// The file it writes, when the item names it.
        var path: String?
        var started = ContinuousClock.now
    }

    /// What a running transfer has done so far, for a front-end's progress bar.
    public struct Live: Sendable, Equatable {
        /// The file's size, once known.
        public var totalLength: Int64?
        /// Bytes in the file so far.
        public var completedLength: Int64
        /// Its average speed since it started, in bytes per second.
        public var bytesPerSecond: Int64
        /// Connections open now.
        public var connections: Int
        /// The file's path, once named.
        public var path: String?
    }

    /// What the transfer of `gid` has done so far; nil when none runs (the list's figures stand).
    public func live(_ gid: String) -> Live? {
        guard let running = state.withLock({ $0.running[gid] }), let download = running.batch.download(at: 0)
        else {
            return nil
        }
        let progress = download.progress
        let seconds = (ContinuousClock.now - running.started) / .seconds(1)
        return Live(
            totalLength: progress.totalBytes, completedLength: progress.bytesWritten,
            bytesPerSecond: seconds > 0 ? Int64(Double(progress.bytesWritten) / seconds) : 0,
            connections: progress.activeConnections, path: download.destination.path(percentEncoded: false))
    }

    struct State {
        var maximumActive: Int
        fileprivate var running: [String: Running] = [:]
        var launches = 0
        var stopped = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        /// Items waiting for the network, until when (``NetworkHold``).
        var held: [String: NetworkHold] = [:]
    }

    let state: Mutex<State>

    /// Files no download writes (the list's, the secret's: ``BatchOptions/reservedPaths``).
    let reservedPaths: [String]
    /// The folder every item must stay inside when it starts, as when it was added; nil: no rule.
    let folder: DownloadFolder?

    /// A queue over `list`, downloading through `client`, at most `maximumActive` at once, never
    /// writing one of `reservedPaths`, nor outside `folder` when one is given.
    public init(
        list: DownloadList, client: FastpullClient = .shared, maximumActive: Int = 5,
        reservedPaths: [String] = [], folder: DownloadFolder? = nil
    ) {
        self.reservedPaths = reservedPaths
        self.folder = folder
        self.list = list
        self.client = client
        state = Mutex(State(maximumActive: max(1, maximumActive)))
    }

    /// How many downloads run at once; a lower figure lets the running ones finish.
    public var maximumActive: Int {
        get { state.withLock { $0.maximumActive } }
        set {
            state.withLock { $0.maximumActive = max(1, newValue) }
            fill()
        }
    }

    /// Puts back in line what was active when the manager last stopped (``DownloadList/recoverAfterRestart()``)
    /// and starts what fits.
    public func start() throws {
        _ = try list.recoverAfterRestart()
        fill()
    }

    /// Adds a download (waiting, or `paused`) and starts it if a place is free; `gid` is the one it
    /// gets, when given (``DownloadList/add(uris:directory:outputName:options:position:gid:paused:)``).
    @discardableResult
    public func add(
        uris: [String], directory: String, outputName: String? = nil, options: [String: String] = [:],
        position: Int? = nil, gid: String? = nil, paused: Bool = false
    ) throws -> ManagedDownload {
        let item = try list.add(
            uris: uris, directory: directory, outputName: outputName, options: options, position: position,
            gid: gid, paused: paused)
        fill()
        return try list.download(item.gid) ?? item
    }

    /// Pauses a waiting or active download: `paused` in the list when this returns; an active one's
    /// transfer stops in the background, its journal saved.
    @discardableResult
    public func pause(_ gid: String) throws -> ManagedDownload {
        try stopping(.pause, gid)
    }

    /// Lets a paused download wait for a place again.
    @discardableResult
    public func unpause(_ gid: String) throws -> ManagedDownload {
        try queueing(.unpause, gid)
    }

    /// Removes a download from the queue (it stays as history); an active one's transfer stops.
    @discardableResult
    public func remove(_ gid: String) throws -> ManagedDownload {
        try stopping(.remove, gid)
    }

    /// Tries a failed download again.
    @discardableResult
    public func retry(_ gid: String) throws -> ManagedDownload {
        try queueing(.retry, gid)
    }

    /// Changes an item's options (``DownloadList/changeOptions(_:_:)``); an active one's transfer
    /// starts again with them, first in line, from its journal.
    @discardableResult
    public func changeOptions(_ gid: String, _ changes: [String: String]) throws -> ManagedDownload {
        let item = try list.changeOptions(gid, changes)
        guard item.status == .active else { return item }
        restart(gid)
        return try list.download(gid) ?? item
    }

    /// Applies an event that ends an item's transfer: the list first, then the transfer stops.
    private func stopping(_ event: ItemEvent, _ gid: String) throws -> ManagedDownload {
        recordName(gid)
        release(gid)
        let item = try list.apply(event, to: gid)
        stopTransfer(gid)
        return item
    }

    /// Applies an event that puts an item back in line, and starts what fits.
    private func queueing(_ event: ItemEvent, _ gid: String) throws -> ManagedDownload {
        let item = try list.apply(event, to: gid)
        release(gid)
        fill()
        return try list.download(gid) ?? item
    }

    /// The most bytes per second all downloads receive together (aria2's
    /// `max-overall-download-limit`); nil for none. Set where there was none, the running transfers
    /// start again under it (from their journals), so it holds for them too.
    public var overallLimit: Int64? {
        get { client.maximumBytesPerSecond }
        set {
            let wasUnlimited = client.maximumBytesPerSecond == nil
            client.maximumBytesPerSecond = newValue.flatMap { $0 > 0 ? $0 : nil }
            if wasUnlimited, client.maximumBytesPerSecond != nil { restartRunning() }
        }
    }

    /// Starts every running transfer again, first in line, from its journal.
    private func restartRunning() {
        for gid in runningGIDs where (try? list.download(gid))?.status == .active { restart(gid) }
    }

    /// Starts an active item's transfer again, first in line, from its journal: the list says
    /// `waiting`, the transfer stops, and the place it frees starts it anew.
    private func restart(_ gid: String) {
        _ = try? list.apply(.interrupt, to: gid)
        _ = try? list.changePosition(gid, by: 0, from: .set)
        stopTransfer(gid)
    }

    /// The GIDs whose transfers run now.
    public var runningGIDs: Set<String> { state.withLock { Set($0.running.keys) } }

    /// Returns once nothing runs and nothing waits (every item paused or history).
    public func waitUntilIdle() async {
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state in
                guard state.running.isEmpty else {
                    state.idleWaiters.append(continuation)
                    return false
                }
                return true
            }
            if idle { continuation.resume() }
        }
    }

    /// Stops every transfer (each journal saved) and starts no more. The items that were active stay
    /// `active` in the list, as after a crash: the next ``start()`` puts them first in line.
    public func stop() async {
        let running = state.withLock { state in
            state.stopped = true
            return Array(state.running.values)
        }
        for transfer in running { transfer.task.cancel() }
        for transfer in running { await transfer.task.value }
    }

    // MARK: - Running

    /// Starts the first waiting downloads while places are free, under the queue's lock: a pause or a
    /// remove always finds the transfer of an item the list calls active, and two fills never start
    /// more than the limit. An item whose previous transfer is still stopping (paused and unpaused at
    /// once) waits for it: two transfers never share a file. (Lock order: the queue's, then the
    /// list's; the list never calls out.)
    func fill() {
        state.withLock { state in
            let now = ContinuousClock.now
            while !state.stopped, state.running.count < state.maximumActive {
                // Still stopping, or waiting for the network: not started now.
                let busy = Set(state.running.keys).union(state.held.filter { $0.value.until > now }.keys)
                // Two items naming one file never run at once: the second waits for the first.
                let written = Set(state.running.values.compactMap(\.path))
                guard let next = firstStartable(busy: busy, written: written),
                    let item = try? list.apply(.start, to: next.gid)
                else { return }
                state.launches += 1
                if let running = launch(item, as: state.launches) { state.running[item.gid] = running }
            }
        }
    }

    /// The first waiting item that may start: not still stopping, and naming no file a running one
    /// writes. Read a page at a time, so a long queue costs one short read, not the whole list.
    private func firstStartable(busy: Set<String>, written: Set<String>) -> ManagedDownload? {
        let page = 32
        var offset = 0
        while let items = try? list.downloads([.waiting], offset: offset, limit: page), !items.isEmpty {
            if let next = items.first(where: {
                !busy.contains($0.gid) && !(Self.path(of: $0).map(written.contains) ?? false)
            }) {
                return next
            }
            offset += page
        }
        return nil
    }

    /// The transfer of `item`, started; nil (the item failed) when its URL is none.
    private func launch(_ item: ManagedDownload, as launch: Int) -> Running? {
        // The folder rule again, as the item starts: a link made since it was added (a folder it
        // names that did not exist then) must not take its bytes outside.
        if let folder {
            do {
                _ = try folder.directory(item.directory, out: item.outputName)
            } catch {
                _ = try? list.apply(.fail, to: item.gid, error: (code: 16, message: error.description))
                return nil
            }
        }
        // The folders it names are made, as aria2 makes them (inside the download folder, checked
        // above).
        let parent = Self.path(of: item).map { FileSystem.split($0).folder } ?? item.directory
        try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        let folder = URL(filePath: item.directory, directoryHint: .isDirectory)
        let destination: BatchItem.Destination =
            item.outputName.map { .file(folder.appending(path: $0, directoryHint: .notDirectory)) }
            ?? .folder(folder)
        guard let url = item.uris.first.flatMap({ URL(string: $0) }) else {
            _ = try? list.apply(
                .fail, to: item.gid, error: (code: 28, message: "\(item.uris.first ?? "") is not a URL"))
            return nil
        }
        var configuration: Configuration
        do {
            configuration = try ItemOptions.configuration(item.options)
        } catch {
            _ = try? list.apply(.fail, to: item.gid, error: (code: 28, message: error.message))
            return nil
        }
        configuration.sources.mirrors = item.uris.dropFirst().compactMap { URL(string: $0) }
        let batch = Batch(
            [BatchItem(url: url, destination: destination)], configuration: configuration,
            options: BatchOptions(
                parallelFiles: 1, existingFiles: existingFiles(for: item), keepsEvents: false,
                reservedPaths: reservedPaths),
            client: client)
        let task = Task { [self] in
            let outcome = await batch.run().first
            // A failure for want of a network is not the item's: it waits for the network instead.
            let away: String?
            if case .failure(let error) = outcome?.result, error.code == .network, !Task.isCancelled {
                away = await networkAway(for: item, error)
            } else {
                away = nil
            }
            finished(item.gid, launch: launch, outcome: outcome, networkAway: away)
        }
        return Running(batch: batch, task: task, launch: launch, path: Self.path(of: item))
    }

    /// What an item does with a file already at its output. A name the item was given (or got from
    /// its server on an earlier run) is its own: a file there that is not the one asked for is
    /// fetched again and replaced, unless another item of the list completed that file; then, as for
    /// a name the server has yet to give, the file is left alone and the item saves beside it as
    /// `name.1`, `name.2`, … (aria2's auto-file-renaming), resuming such a name it started earlier.
    private func existingFiles(for item: ManagedDownload) -> BatchOptions.ExistingFiles {
        // A list that cannot be read says nothing: the file is left alone.
        guard let name = item.outputName,
            (try? list.isCompletedByAnother(directory: item.directory, outputName: name, gid: item.gid))
                == false
        else { return .rename }
        return .keepIfVerified
    }

    /// Keeps what a running item's transfer knows — the name the server gave its file, its size and
    /// the bytes in — so that its row still says which file it is and how far it got once stopped, and
    /// a later transfer writes the same file.
    private func recordName(_ gid: String) {
        guard let live = live(gid), let item = try? list.download(gid) else { return }
        try? list.recordProgress(
            gid, total: live.totalLength ?? item.totalLength, completed: live.completedLength)
        guard let path = live.path, let name = Self.outputName(of: path, for: item), name != item.outputName
        else { return }
        try? list.recordOutputName(gid, name)
    }

    /// The name to record for `path`, the file a transfer of `item` writes: relative to the item's
    /// folder (a given `out` may name folders in it), or the file's own name. A given name is kept
    /// unless the transfer saved beside another item's file (`name.1`).
    private static func outputName(of path: String, for item: ManagedDownload) -> String? {
        let folder = item.directory.hasSuffix("/") ? item.directory : item.directory + "/"
        let relative = path.hasPrefix(folder) ? String(path.dropFirst(folder.count)) : nil
        guard let given = item.outputName else {
            return relative ?? path.split(separator: "/").last.map(String.init)
        }
        guard let relative, relative.hasPrefix(given + "."), relative != given else { return given }
        return relative
    }

    /// The file an item writes, when it names one.
    private static func path(of item: ManagedDownload) -> String? {
        item.outputName.map { FileSystem.join(item.directory, $0) }
    }

    /// A transfer ended: the item becomes complete or failed, unless the user stopped it (it is then
    /// paused or removed already), or the queue is stopping (it stays active, to resume first). The
    /// list is updated while the transfer still holds its place, so no new transfer of the item can
    /// start in between and have this end taken for its own.
    private func finished(_ gid: String, launch: Int, outcome: BatchOutcome?, networkAway: String? = nil) {
        let stopping = state.withLock { $0.stopped }
        if !stopping, (try? list.download(gid))?.status == .active {
            switch outcome?.result {
            case .failure where networkAway != nil:
                recordName(gid)
                hold(gid, because: networkAway ?? "")
                _ = try? list.apply(.networkLost, to: gid)
            case .success(let report):
                release(gid)
                try? list.recordProgress(gid, total: report.size, completed: report.size)
                if let item = try? list.download(gid),
                    let name = Self.outputName(of: report.outputPath, for: item),
                    name != item.outputName
                {
                    try? list.recordOutputName(gid, name)
                }
                _ = try? list.apply(.finish, to: gid)
            case .failure(let error):
                recordName(gid)
                release(gid)
                _ = try? list.apply(
                    .fail, to: gid, error: (code: Self.aria2Code(error), message: error.message))
            case nil:
                _ = try? list.apply(.fail, to: gid, error: (code: 1, message: "the download did not run"))
            }
        }
        state.withLock { state in
            if state.running[gid]?.launch == launch { state.running[gid] = nil }
        }
        fill()
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard state.running.isEmpty else { return [] }
            defer { state.idleWaiters.removeAll() }
            return state.idleWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// aria2's error code for a failure (what front-ends show and scripts test): 3 not found, 24
    /// authorization failed, 29 server overloaded, 22 another bad answer, 6 a network problem, 32 a
    /// checksum that failed, 28 a bad option, 9/17 for the disk, 7 stopped unfinished, 1 otherwise.
    static func aria2Code(_ error: FastpullError) -> Int {
        switch error.code {
        case .httpStatus:
            switch error.httpStatus {
            case 404, 410: return 3
            case 401, 403, 407: return 24
            case 503, 429: return 29
            default: return 22
            }
        case .network, .tls: return 6
        case .integrity, .remoteChanged: return 32
        case .usage: return 28
        case .localIO: return error.message.contains("No space") ? 9 : 17
        case .interrupted: return 7
        default: return 1
        }
    }

    /// Stops the transfer of `gid`, if one runs (the list says why already).
    private func stopTransfer(_ gid: String) {
        // Cancelling the batch's task stops its download wherever it is (naming probe, transfer),
        // the journal saved.
        state.withLock { $0.running[gid]?.task }?.cancel()
    }
}
