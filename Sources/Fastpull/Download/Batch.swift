import FastpullHTTP
import FastpullNet
import FoundationEssentials
import Glibc
import Synchronization

/// Downloads many files, a few at a time, and returns every file's outcome: one failure does not stop
/// the others. What a build tool calls to fetch its artifacts.
///
/// ```swift
/// let outcomes = await Fastpull.download([
///     BatchItem(url: toolchainURL, destination: folder.appending(path: "toolchain.tar.gz"),
///               checksums: [.sha256(toolchainHex)]),
///     BatchItem(url: modelURL, destination: folder.appending(path: "model.bin"),
///               checksums: [.sha256(modelHex)]),
/// ])
/// for outcome in outcomes where outcome.error != nil { print(outcome.error!) }
/// ```
///
/// A file already at its destination that matches its checksums is not fetched again (see
/// ``BatchOptions/existingFiles``). Connections to one host are limited across all the files, and
/// every other download of the process (see ``Configuration/Connections/maximumPerHost``).
///
/// - Parameters:
///   - items: what to fetch, and where.
///   - configuration: how every file is fetched; an item's own ``BatchItem/configuration`` replaces it.
///   - options: how many files at once, and what to do with files that already exist.
/// - Returns: one outcome per item, in the items' order.
public func download(
    _ items: [BatchItem], configuration: Configuration = .init(), options: BatchOptions = .init()
) async -> [BatchOutcome] {
    await FastpullClient.shared.download(items, configuration: configuration, options: options)
}

/// A batch of downloads: create it, optionally watch ``events`` and each running ``download(at:)``,
/// and ``run()`` it. Cancelling the task that runs it stops every download (each saves its journal)
/// and fails the items not started yet with ``FastpullError/Code/interrupted``.
public final class Batch: Sendable {
    /// The items so far, in order (an open batch gets more while it runs).
    public var items: [BatchItem] { feed.items }
    /// The items and the line of those not started yet.
    private let feed: BatchFeed
    /// How every item is fetched, unless it has its own configuration.
    public let configuration: Configuration
    /// How the batch runs.
    public let options: BatchOptions
    /// The sequence ``events`` hands out: made with the batch, or, without
    /// ``BatchOptions/keepsEvents``, when first asked for.
    private let eventChannel = PlainMutex<EventChannel>(EventChannel())
    private let downloads: PlainMutex<[Int: Download]>
    /// Output paths by the item that saves there: two items never write one file.
    private let reservations = PlainMutex<[String: Int]>([:])
    /// Output folders as written, and where their symlinks lead.
    private let resolvedFolders = PlainMutex<[String: String]>([:])
    /// Items naming their output reserve it in the items' order: the earlier of two keeps a path.
    private let naming: TurnTaker
    /// Kept-alive connections the files share, the client's: a file after the first reuses one (no
    /// TCP or TLS handshake, the CA store loaded once).
    private let connections: ConnectionCache
    /// What owns the connections, per-host counts and threads of the batch's downloads.
    let client: FastpullClient

    /// Prepares a batch through `client`; nothing happens until ``run()``. An `open` batch takes more
    /// items while it runs, with ``add(_:)``, and its run ends once ``finishAdding()`` is called and
    /// every item has ended (`fastpull -i -` adds each line of its input as it comes).
    public init(
        _ items: [BatchItem], configuration: Configuration = .init(), options: BatchOptions = .init(),
        open: Bool = false, client: FastpullClient = .shared
    ) {
        self.client = client
        feed = BatchFeed(items, open: open)
        self.configuration = configuration
        self.options = options
        downloads = PlainMutex([:])
        naming = TurnTaker(order: Array(items.indices))
        connections = client.resources.connections(for: configuration)
        if options.keepsEvents { _ = events }
        // The reserved files are taken by no item (``Self/reserved``), so any that names one fails.
        for path in options.reservedPaths {
            _ = reserve(URL(fileURLWithPath: path), for: Self.reserved)
        }
        // Named outputs are known now: a second item with the same one fails before anything starts
        // (told when the run starts), and before an item added later can take the name.
        for (index, item) in items.enumerated() {
            guard case .file(let path) = item.destination, let other = reserve(path, for: index) else {
                continue
            }
            let outcome = BatchOutcome(
                index: index, item: item, result: .failure(collision(path, with: other)),
                alreadyPresent: false)
            early.withLock { $0[index] = outcome }
            untold.withLock { $0.append(index) }
            naming.take(index)
        }
        feed.remove(Set(untold.withLock { $0 }))
    }

    /// Whether more items may still be added (``add(_:)``).
    public var isOpen: Bool { feed.isOpen }

    /// Adds `item` to an open batch, running or not: it starts when a lane is free, after the items
    /// before it. An output path another item has fails it at once, as in a batch made whole. Returns
    /// its index, or nil when the batch was not open or ``finishAdding()`` was called (nothing is
    /// added).
    @discardableResult
    public func add(_ item: BatchItem) -> Int? {
        // One item at a time: its index, its turn to name an output and its place in the line agree.
        adding.withLock { _ -> Int? in
            guard let index = feed.append(item) else { return nil }
            naming.append(index)
            if case .file(let path) = item.destination, let other = reserve(path, for: index) {
                let error = collision(path, with: other)
                emit(index, .failed(error))
                early.withLock {
                    $0[index] = BatchOutcome(
                        index: index, item: item, result: .failure(error), alreadyPresent: false)
                }
                naming.take(index)
                return index
            }
            feed.enqueue(index)
            return index
        }
    }

    /// No more items come: the run ends once those there are have ended. Idempotent.
    public func finishAdding() {
        feed.close()
    }

    /// Outcomes of items that failed before their turn (their output is another item's).
    private let early = PlainMutex<[Int: BatchOutcome]>([:])
    /// Items given at creation whose failure is in `early` but not told yet: the run tells it.
    private let untold = PlainMutex<[Int]>([])
    /// Held while an item is added.
    private let adding = PlainMutex(())

    /// The stream of ``events``, once made, and whether ``run()`` has ended.
    private struct EventChannel {
        var stream: AsyncStream<BatchEvent>?
        var sink: EventQueue<BatchEvent>?
        var ended = false
    }

    /// Every event of every download, tagged with its item's position, including a
    /// ``Event/Kind/finished`` for a file that was already in place and a ``Event/Kind/failed`` for an
    /// item that failed before its download started. Ends when ``run()`` returns. One consumer.
    ///
    /// Kept from the moment the batch is created, so a consumer that starts late or reads slowly
    /// misses nothing (unless ``BatchOptions/keepsEvents`` is false), except progress: an unread
    /// progress event of a download gives way to a newer one of the same download (the same policy
    /// as ``Download/events``).
    public var events: AsyncStream<BatchEvent> {
        eventChannel.withLock { channel in
            if let stream = channel.stream { return stream }
            let queue = EventQueue<BatchEvent>()
            let stream = queue.stream
            channel.stream = stream
            channel.sink = queue
            // Asked for after the run: nothing more will come.
            if channel.ended { queue.finish() }
            return stream
        }
    }

    /// The download of item `index` once it has started (it stays available after it ends); nil
    /// before, and for an item that needed no download. Its events come through ``events``, tagged
    /// with `index`, not through its own ``Download/events``.
    public func download(at index: Int) -> Download? {
        downloads.withLock { $0[index] }
    }

    /// Fetches every item, ``BatchOptions/parallelFiles`` at a time, in order.
    ///
    /// - Returns: one outcome per item, in the items' order.
    public func run() async -> [BatchOutcome] {
        defer {
            eventChannel.withLock { channel in
                channel.ended = true
                return channel.sink
            }?.finish()
        }
        var outcomes: [Int: BatchOutcome] = [:]
        let failedAtOnce = early.withLock { $0 }
        for index in untold.withLock({ $0 }) {
            if let error = failedAtOnce[index]?.error { emit(index, .failed(error)) }
        }
        untold.withLock { $0 = [] }
        let width = max(options.parallelFiles, 1)
        // One control thread per lane. Each lane takes the next item when its last one ends and runs
        // it there from start to end (``ExecutorSet/laneThread``): a small file's steps follow one
        // another on one thread, without a hop through the shared pool between them.
        let (open, waiting) = feed.outlook
        let lanes = (0..<(open ? width : min(width, waiting))).map {
            ThreadExecutor(name: "fastpull-ctl\($0)", threads: client.threads)
        }
        defer { for lane in lanes { lane.shutdown() } }
        await withTaskGroup(of: [BatchOutcome].self) { group in
            for lane in lanes {
                group.addTask(executorPreference: lane) {
                    await ExecutorSet.$laneThread.withValue(lane) {
                        var done: [BatchOutcome] = []
                        while let index = await self.feed.next() {
                            done.append(await self.fetch(index))
                        }
                        return done
                    }
                }
            }
            for await done in group {
                for outcome in done { outcomes[outcome.index] = outcome }
            }
        }
        outcomes.merge(early.withLock { $0 }) { first, _ in first }
        // Added to an open batch whose run was stopped before they started.
        let items = feed.items
        for index in items.indices where outcomes[index] == nil {
            let error = FastpullError(
                .interrupted, "interrupted before \(items[index].url.redactedForDisplay) was started")
            emit(index, .failed(error))
            outcomes[index] = BatchOutcome(
                index: index, item: items[index], result: .failure(error), alreadyPresent: false)
        }
        return items.indices.map { outcomes[$0]! }
    }

    private func emit(_ index: Int, _ event: Event) {
        eventChannel.withLock { $0.sink }?.yield(
            BatchEvent(index: index, event: event), progressOf: event.kind == .progress ? index : nil)
    }

    /// Fetches one item: names it, keeps an existing file that is already right, or downloads it.
    private func fetch(_ index: Int) async -> BatchOutcome {
        let item = feed[index]
        func failed(_ error: FastpullError) -> BatchOutcome {
            emit(index, .failed(error))
            return BatchOutcome(index: index, item: item, result: .failure(error), alreadyPresent: false)
        }
        // Whatever happens before it, this item's turn to name an output passes.
        var namingTurnTaken = false
        defer { if !namingTurnTaken { naming.take(index) } }
        if Task.isCancelled {
            return failed(
                FastpullError(.interrupted, "interrupted before \(item.url.redactedForDisplay) was started"))
        }
        var settings = item.configuration ?? configuration
        settings.integrity.checksums += item.checksums
        // Refusing existing files also refuses one that appears during the download; the modes that
        // may replace one replace it once it is verified.
        settings.resume.replacesExistingFile = [.replace, .keepIfVerified].contains(options.existingFiles)
        // What is there is replaced, not continued: --force, or a file a run saved whose server
        // changed (below).
        if options.existingFiles == .replace { settings.resume.adoptsPartialFile = false }

        var file: URL
        var probed: Probed?
        // Whether the naming found no file and no `.part` at the name (no need to look again).
        var absent = false
        // The URL the bytes come from: the item's, or the first of the file a Metalink document at it
        // describes.
        var source = item.url
        switch item.destination {
        case .file(let path):
            file = path
            naming.take(index)
            namingTurnTaken = true
        case .folder(let folder):
            var named: URL
            do {
                // The naming probe is the file's first request: `--verbose` shows it as the file's.
                (named, probed, absent) = try await Self.name(
                    item.url, in: folder, configuration: settings, connections: connections, client: client,
                    exchanges: { [self] in emit(index, $0) })
                if let found = probed,
                    let followed = try await Self.followedMetalink(
                        item.url, probed: found, folder: folder, configuration: settings)
                {
                    (source, named, settings) = followed
                    probed = nil
                    absent = false
                    emit(
                        index,
                        .warning(
                            "\(item.url.redactedForDisplay) is a Metalink document: downloading the file it describes, \(named.lastPathComponent)"
                        ))
                }
            } catch {
                return failed(error)
            }
            let other = await naming.inTurn(index) { reserve(named, for: index) }
            namingTurnTaken = true
            if let other { return failed(collision(named, with: other)) }
            file = named
        }

        // The name asked for, before any renaming. Renaming, a file that appears at the name during
        // the download sends this one to the next free name too.
        let wanted = file
        if options.existingFiles == .rename {
            settings.resume.renamingBase = wanted.path(percentEncoded: false)
        }
        // A journal names its download's URL and the part of the file it fetches (`--range`), as the
        // resume itself compares them: a `name.N.part` is this item's when its journal says this.
        let journalURL = Journal.downloadURL(source, byteRange: settings.request.byteRange)
        // A file at the output path: looked up once (none there when the naming just found none), and
        // not again by the download when nothing is there.
        let standardOutput = FileSystem.isStandardOutput(file.path(percentEncoded: false))
        let kind = absent || standardOutput ? nil : FileSystem.kind(of: file.path(percentEncoded: false))
        let present = kind == S_IFREG
        var seenAbsent = kind == nil && !standardOutput
        // The `.part` the rename below made to take its name, if it made one.
        var reservedPart: FileSystem.Creation? = nil
        if present {
            switch options.existingFiles {
            case .skip:
                probed?.answer?.discard()
                let path = file.path(percentEncoded: false)
                var report = Report(
                    url: source, finalURL: source, outputPath: path, size: FileSystem.size(path) ?? 0,
                    seconds: 0, bytesFetched: 0, sha256: "", verifiedChecksums: [], connections: 0,
                    segments: 0, retries: 0, resumedBytes: 0, rangesSupported: false, digests: [:],
                    checks: [], transferSeconds: 0, hashTailSeconds: 0)
                report.keptAsFound = true
                emit(index, .finished(Event.Finished(report, alreadyPresent: true)))
                return BatchOutcome(index: index, item: item, result: .success(report), alreadyPresent: true)
            case .rename:
                probed?.answer?.discard()
                probed = nil
                (file, reservedPart) = freeName(beside: wanted, for: index, journalURL: journalURL)
                seenAbsent = false
            case .keepIfVerified, .refuse, .replace:
                break
            }
        }
        if options.existingFiles != .replace, options.existingFiles != .rename, present {
            // A file named by the server is there already: what it needs is looked at with a HEAD
            // (or not at all), and the naming probe's answer would only wait, unread, meanwhile.
            probed?.answer?.discard()
            probed?.answer = nil
            switch await ExistingFile.decide(
                file, url: source, configuration: settings, refusing: options.existingFiles == .refuse,
                connections: connections, client: client, emit: { [self] in emit(index, $0) })
            {
            case .keep(let report):
                emit(index, .finished(Event.Finished(report, alreadyPresent: true)))
                return BatchOutcome(index: index, item: item, result: .success(report), alreadyPresent: true)
            case .refuse(let error):
                return failed(error)
            case .fetch(let replacing, let found):
                if replacing {
                    settings.resume.replacesExistingFile = true
                    settings.resume.adoptsPartialFile = false
                }
                if let found { probed = found }
            }
        }

        let renaming = options.existingFiles == .rename && !standardOutput
        // The names another download held when this item tried them.
        var tried: Set<String> = []
        while true {
            let download = Download(
                from: source, to: file, configuration: settings,
                observer: { [self] event in
                    // A name another download writes is left for the next free one, not failed on.
                    if renaming, case .failed(let error) = event.detail, error.heldByAnotherDownload {
                        return
                    }
                    emit(index, event)
                },
                sharedConnections: connections, probed: probed, existingFileDecided: true,
                destinationSeenAbsent: seenAbsent, client: client)
            downloads.withLock { $0[index] = download }
            do {
                let report = try await download.run()
                return BatchOutcome(index: index, item: item, result: .success(report), alreadyPresent: false)
            } catch {
                Self.releaseReservedPart(file, reservedPart)
                guard renaming, error.heldByAnotherDownload else {
                    return BatchOutcome(
                        index: index, item: item, result: .failure(error), alreadyPresent: false)
                }
                tried.insert(file.path(percentEncoded: false))
                guard !Task.isCancelled, tried.count <= Self.mostRenamesPerItem else {
                    // The failure the observer held back is told now (stopped: as an interruption).
                    let told =
                        Task.isCancelled
                        ? FastpullError(
                            .interrupted, "interrupted before \(item.url.redactedForDisplay) was started")
                        : error
                    emit(index, .failed(told))
                    return BatchOutcome(
                        index: index, item: item, result: .failure(told), alreadyPresent: false)
                }
                // Another download took this name between the look and the claim (another run of
                // `--auto-rename`, another item of a download list): the next free name. The kept
                // answer of the naming probe went with the failed attempt.
                probed = nil
                seenAbsent = false
                (file, reservedPart) = freeName(
                    beside: wanted, for: index, journalURL: journalURL, tried: tried)
            }
        }
    }

    /// How many names a renaming item tries, each held by another download when it came to it,
    /// before it fails as the last one's claim did.
    private static let mostRenamesPerItem = 100

    /// Reserves `file` as item `index`'s output; returns the item that has it already, if any.
    /// The first of `name.1`, `name.2`, … beside `file` that holds no file, that no other item took
    /// (``BatchOptions/ExistingFiles/rename``) and that is not in `tried`; reserved for item `index`. A
    /// name whose partial download is there is skipped unless its journal names this download
    /// (`journalURL`: the URL, with the part of the file a `--range` fetches) and no other download
    /// holds it now: then it is this item's, from an earlier run, and resumed.
    ///
    /// A free name is taken by creating its `.part` (exclusively, empty): another process choosing at
    /// the same moment finds it there, journal-less, and goes on to the next number instead of
    /// failing on the same name. `created` identifies that file, for ``releaseReservedPart(_:_:)``.
    /// Where it cannot be created for another reason (no permission, no room, a name too long), that
    /// name is returned as it is: the download then fails saying why.
    private func freeName(beside file: URL, for index: Int, journalURL: String, tried: Set<String> = [])
        -> (name: URL, created: FileSystem.Creation?)
    {
        let path = file.path(percentEncoded: false)
        var number = 1
        while true {
            let candidate = "\(path).\(number)"
            let part = candidate + ".part"
            number += 1
            guard !tried.contains(candidate), !FileSystem.exists(candidate) else { continue }
            let creation = FileSystem.createEmpty(part)
            switch creation {
            case .failed:
                return (URL(fileURLWithPath: candidate), nil)
            case .taken:
                guard JournalStore(partPath: part).records(url: journalURL),
                    !OutputFile.isLockedByAnother(part)
                else { continue }
            case .created:
                break
            }
            let created: FileSystem.Creation? = if case .created = creation { creation } else { nil }
            guard reserve(URL(fileURLWithPath: candidate), for: index) == nil else {
                if case .created(let device, let inode) = creation {
                    FileSystem.removeIfUntouched(part, device: device, inode: inode)
                }
                continue
            }
            return (URL(fileURLWithPath: candidate), created)
        }
    }

    /// After a download into a name ``freeName(beside:for:journalURL:tried:)`` took by creating its
    /// `.part` failed: that `.part` goes if it is still the empty file made then, held by nobody (one
    /// that holds bytes stays for a resume, as the download decided; one made since is another's).
    private static func releaseReservedPart(_ file: URL, _ creation: FileSystem.Creation?) {
        guard case .created(let device, let inode) = creation else { return }
        FileSystem.removeIfUntouched(file.path(percentEncoded: false) + ".part", device: device, inode: inode)
    }

    private func reserve(_ file: URL, for index: Int) -> Int? {
        // Split as text: URL's own path operations look at the file system and parse again each time.
        let (written, name) = FileSystem.split(file.path(percentEncoded: false))
        // Folders are resolved once each: a batch of hundreds of files into one folder would otherwise
        // look up every component of its path again for each.
        let folder =
            resolvedFolders.withLock { $0[written] }
            ?? {
                let resolved = file.deletingLastPathComponent().standardizedFileURL.resolvingSymlinksInPath()
                    .path(percentEncoded: false)
                resolvedFolders.withLock { $0[written] = resolved }
                return resolved
            }()
        let key = FileSystem.join(folder, String(name))
        return reservations.withLock { taken in
            if let other = taken[key], other != index { return other }
            taken[key] = index
            return nil
        }
    }

    /// The index that holds the reserved paths (``BatchOptions/reservedPaths``).
    private static let reserved = -1

    /// The error of an item whose output another item of the batch has.
    private func collision(_ file: URL, with other: Int) -> FastpullError {
        guard other != Self.reserved else {
            return FastpullError(
                .localIO,
                "\(file.path(percentEncoded: false)) is a file the program keeps for itself (its list or its secret); no download writes it: give it another name"
            )
        }
        return FastpullError(
            .localIO,
            "\(file.path(percentEncoded: false)) is also the output of item \(other + 1) (\(items[other].url.redactedForDisplay)); two items of one batch never write the same file: give one of them another name"
        )
    }

    /// The file in `folder` that `url` is saved as: named by the server's `Content-Disposition`, else
    /// the URL (see ``OutputName``). Probes the URL for the header, and returns what the probe found
    /// for the download that follows, and whether nothing was at the name and no `.part` beside it when it
    /// looked; `exchanges` gets the probe's request and response heads.
    static func name(
        _ url: URL, in folder: URL, configuration: Configuration, connections: ConnectionCache? = nil,
        client: FastpullClient = .shared, exchanges: (@Sendable (Event) -> Void)? = nil
    ) async throws(FastpullError) -> (URL, Probed, absent: Bool) {
        // Paths are joined as text and made a URL once: URL's own joining parses and encodes again.
        let folderPath = folder.path(percentEncoded: false)
        func file(named name: String) -> URL {
            // A folder that is no file URL stays what it is, for the download to refuse.
            guard folder.isFileURL else { return folder.appending(path: name, directoryHint: .notDirectory) }
            return URL(filePath: FileSystem.join(folderPath, name), directoryHint: .notDirectory)
        }
        let fallbackName = OutputName.derive(from: url, contentDisposition: nil)
        let fallback = file(named: fallbackName)
        // The probe is the file's first GET, its answer kept for the download: a small file comes in
        // that one request. Not where the file may be there already (a rerun) or resumes from its
        // `.part`: a HEAD then tells what is needed, and costs no body that nobody reads.
        let path = FileSystem.join(folderPath, fallbackName)
        // Whether nothing at all is at the name (a folder, a FIFO or a link there is for the download
        // to look at and refuse or write to), and whether no file is there nor its `.part`.
        let nothingThere = !FileSystem.exists(path)
        let fresh =
            (nothingThere || !FileSystem.isRegularFile(path)) && !FileSystem.isRegularFile(path + ".part")
        let planned: Planned
        do {
            // Of the probe's events only its request and response heads (`--verbose`) are passed on:
            // the download tells the rest itself.
            let observer = exchanges.map { forward in
                { @Sendable (event: Event) in if case .exchange = event.detail { forward(event) } }
            }
            planned = try await Download(
                from: url, to: fallback, configuration: configuration, observer: observer,
                sharedConnections: connections, client: client
            ).planned(keepingAnswer: fresh && configuration.connections.maximumBytesPerSecond == nil)
        } catch let error as FastpullError {
            throw error
        } catch {
            throw FastpullError(.internalError, "\(error)")
        }
        let name = OutputName.derive(from: url, contentDisposition: planned.plan.probe.contentDisposition)
        return (
            name == fallbackName ? fallback : file(named: name), planned.probed,
            name == fallbackName && fresh && nothingThere
        )
    }
}
