import Fastpull
import FastpullCommandLine
import FoundationEssentials
import Glibc
import Synchronization

/// Runs the downloads of one command as a ``Batch`` (one URL is a batch of one): the progress view on
/// stderr, `--json` events on stdout, notes, each file's outcome, and the exit code.
struct Run {
    let jobs: [CommandOptions.Job]
    /// Makes the jobs of `-i -`'s lines as they come (``StreamedInput``); nil when the input, if any,
    /// was read whole.
    var streamed: CommandOptions.JobMaker? = nil
    let options: CommandOptions
    let started: ContinuousClock.Instant
    let environment: [String: String]

    func run() async -> Int32 {
        // Signals are watched before any download task starts: a Ctrl-C that arrives while the
        // watcher is being set up would otherwise be lost, and the download run to its end.
        let interruption = Interruption()
        let signals = SignalWatcher { interruption.interrupt() }
        defer { signals.stop() }
        var log: Int32?
        if let path = options.logFile {
            let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                Console().note("error: --log: cannot open '\(path)': \(String(cString: strerror(errno)))")
                return FastpullError.Code.localIO.rawValue
            }
            log = descriptor
        }
        defer { if let log { close(log) } }
        let dump: Int32?
        if let path = options.dumpHeader {
            let descriptor =
                path == "-" ? STDOUT_FILENO : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                Console().note(
                    "error: --dump-header: cannot open '\(path)': \(String(cString: strerror(errno)))")
                return FastpullError.Code.localIO.rawValue
            }
            dump = descriptor
        } else {
            dump = nil
        }
        defer { if let dump, dump != STDOUT_FILENO { close(dump) } }
        let console = Console(log: log)
        if let directory = options.directory {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                // The system's reason (FoundationEssentials has no localized description to give).
                let reason = ((error as? CocoaError)?.underlying as? POSIXError).map {
                    String(cString: strerror($0.code.rawValue))
                }
                console.note(
                    "error: --dir: cannot create the folder \(directory): \(reason ?? String(describing: error))"
                )
                return FastpullError.Code.localIO.rawValue
            }
        }
        // The folders an output names are made, as aria2 makes them (curl with --create-dirs): `-o
        // sub/x`, a list's `out=sub/x`, a Metalink file's names in folders of their own.
        for job in jobs { Self.makeFolders(for: job) }
        if options.configuration.tls.insecure && !options.quiet {
            console.note("warning: --insecure: TLS certificates are not verified")
        }
        // Quiet, without `--json` or `--verbose`, nothing is told while the batch runs: no event is
        // kept, and no task wakes for each.
        let hooks = DownloadHooks(complete: options.onComplete, error: options.onError)
        let listens =
            !options.quiet || options.json || options.configuration.diagnostics.verbose || !hooks.isEmpty
        // One limit for every file of the run: the client they all download through holds it.
        if let rate = options.totalRate { FastpullClient.shared.maximumBytesPerSecond = rate }
        let batch = Batch(
            jobs.map(\.item), configuration: options.configuration,
            options: BatchOptions(
                parallelFiles: options.parallelFiles,
                existingFiles: options.force
                    ? .replace
                    : options.update
                        ? .keepIfVerified
                        : options.noClobber ? .skip : options.autoRename ? .rename : .refuse,
                keepsEvents: listens), open: streamed != nil)
        let board = Board(batch: batch)
        let single = jobs.count == 1 && streamed == nil
        let quiet = options.quiet
        let verbose = options.verbose
        let json =
            options.json
            ? JSONEventsWriter(started: started, onClosed: { interruption.interrupt() }) : nil
        let events = listens ? batch.events : nil
        // A batch says each file's outcome when it happens, on a terminal and in a pipe alike; the
        // end then gives only what was not said yet, and the tally.
        let told = Mutex<Set<Int>>([])
        let hookRuns = HookRuns()
        let listener = Task {
            guard let events else { return }
            for await tagged in events {
                let index = tagged.index
                if case .exchange(let exchange) = tagged.event.detail {
                    if let dump {
                        StandardStream.write(
                            exchange.response.joined(separator: "\r\n") + "\r\n\r\n", to: dump)
                    }
                    // Reported for -D alone: not --json's to tell.
                    if !verbose { continue }
                }
                // Read at each event: `-i -` adds items while the batch runs.
                let items = batch.items
                json?.write(tagged.event, index: index, url: items[index].url)
                if !hooks.isEmpty,
                    let call = hooks.call(
                        for: tagged.event, index: index, count: items.count, url: items[index].url,
                        plannedPath: Self.plannedPath(of: index, in: batch))
                {
                    hookRuns.start(call, console: console)
                }
                switch tagged.event.detail {
                case .finished(let finished):
                    board.finish(index, bytes: finished.size, failed: false)
                    if !single && !quiet {
                        console.note("[\(index + 1)/\(items.count)] " + Summary.finished(finished))
                        told.withLock { _ = $0.insert(index) }
                    }
                case .failed(let error):
                    board.finish(index, bytes: 0, failed: true)
                    if !single, error.code != .interrupted {
                        console.note(
                            Summary.failed(error, index: index, count: items.count, url: items[index].url))
                        told.withLock { _ = $0.insert(index) }
                    }
                case .probe(let probe) where single && !quiet:
                    // Where the file goes, said when it starts (the summary says it again at the end).
                    if let path = batch.download(at: index)?.destination.path(percentEncoded: false) {
                        let size = probe.size.map { " (\(ByteFormat.size($0)))" } ?? ""
                        console.note("saving to \(path)\(size)")
                    }
                default:
                    for line in verbose ? Summary.verboseLines(for: tagged.event) : [] {
                        console.note(single ? line : "[\(index + 1)/\(items.count)] \(line)")
                    }
                    if !quiet, let note = Summary.note(for: tagged.event) {
                        console.note(single ? note : "[\(index + 1)/\(items.count)] \(note)")
                    }
                }
            }
        }

        let input = streamed.map { maker in
            StreamedInput(
                STDIN_FILENO, into: batch, maker: maker, console: console, prepare: Self.makeFolders)
        }
        let task = Task { await batch.run() }
        interruption.cancels(task)
        // `--max-time`: the run stops as a signal stops it (what was fetched is kept), and says why.
        let deadline = options.maximumTime.map { limit in
            Task {
                try? await Task.sleep(for: limit)
                if !Task.isCancelled { interruption.expire() }
            }
        }
        let view =
            quiet
            ? nil
            : Task {
                await ProgressView(
                    batch: batch, board: board, console: console,
                    interactive: Terminal.canRedraw(environment),
                    color: Terminal.colorAllowed(environment), unicode: Terminal.unicodeAllowed(environment)
                ).run()
            }
        let outcomes = await task.value
        deadline?.cancel()
        view?.cancel()
        _ = await view?.value
        console.clear()
        await listener.value
        await hookRuns.wait()

        // The deadline stopped the run only if it stopped a file (it may pass just after the last
        // one ended).
        // `-i -` still open: the run was stopped before its input ended, and takes no more.
        let inputCut = streamed != nil && batch.isOpen
        batch.finishAdding()
        let expired =
            interruption.expired && (inputCut || outcomes.contains { $0.error?.code == .interrupted })
        var code = ExitStatus.code(
            outcomes, interrupted: interruption.happened && (expired || !interruption.expired),
            expired: expired)
        let said = told.withLock { $0 }
        if let input, !inputCut, input.badLineCount > 0 || outcomes.isEmpty {
            if outcomes.isEmpty { console.note("error: standard input lists no URL") }
            if input.badLineCount > 0 {
                let lines = input.badLineCount == 1 ? "1 line" : "\(input.badLineCount) lines"
                console.note("\(lines) of standard input skipped (said above): exit 2 unless a file failed")
            }
            if code == 0 { code = ExitStatus.usage }
        }
        if expired, let limit = options.maximumTime {
            let unread = inputCut ? "; the rest of standard input was not read" : ""
            console.note(
                "stopped: --max-time \(Summary.seconds(limit)) passed; what was fetched is kept: run the same command again to resume\(unread)"
            )
        }
        for outcome in outcomes where !said.contains(outcome.index) {
            // The note above says why each stopped file stopped.
            if expired, outcome.error?.code == .interrupted { continue }
            // A file a signal stopped is counted in the tally, not called a failure.
            if !single, outcome.error?.code == .interrupted { continue }
            switch outcome.result {
            case .success(let report):
                guard !quiet else { continue }
                let text = Summary.saved(report, alreadyPresent: outcome.alreadyPresent)
                console.note(single ? text : Summary.outcome(outcome, count: outcomes.count))
            case .failure(let error):
                console.note(
                    single ? Summary.failureLine(error) : Summary.outcome(outcome, count: outcomes.count))
            }
        }
        if let writeOut = options.writeOut {
            let ranged = options.configuration.request.byteRange != nil
            for outcome in outcomes.sorted(by: { $0.index < $1.index }) {
                let planned = Self.plannedPath(of: outcome.index, in: batch)
                StandardStream.write(
                    writeOut.render(.init(outcome, ranged: ranged, plannedPath: planned)), to: STDOUT_FILENO)
            }
        }
        if json?.wasClosed == true {
            console.note("stopped because standard output was closed; run the same command to resume")
        }
        if let problem = options.saveCookies() {
            console.note(problem)
            if code == 0 { code = FastpullError.Code.localIO.rawValue }
        }
        if !single && !quiet && !outcomes.isEmpty {
            console.note(Summary.tally(outcomes, exitCode: code, expired: expired))
        }
        let failed = outcomes.filter { $0.error != nil }.count
        json?.summary(
            files: outcomes.count, succeeded: outcomes.count - failed, failed: failed, exitCode: code,
            dryRun: false)
        return code
    }
}

/// A stop signal (or a closed stdout under `--json`), and the download task it cancels: the task may start after the signal came.
final class Interruption: Sendable {
    private let state = Mutex<(happened: Bool, task: Task<[BatchOutcome], Never>?)>((false, nil))
    private let deadlinePassed = Atomic<Bool>(false)

    var happened: Bool { state.withLock { $0.happened } }

    /// Whether `--max-time` stopped the run (and no signal did first).
    var expired: Bool { deadlinePassed.load(ordering: .acquiring) }

    /// `--max-time` passed: the task stops as a signal stops it.
    func expire() {
        let task = state.withLock { state -> Task<[BatchOutcome], Never>? in
            // Recorded before the stop is: whoever sees the stop sees why.
            if !state.happened { deadlinePassed.store(true, ordering: .releasing) }
            state.happened = true
            return state.task
        }
        task?.cancel()
    }

    /// Records the signal and cancels the task, if there is one yet.
    func interrupt() {
        state.withLock { state in
            state.happened = true
            return state.task
        }?.cancel()
    }

    /// Makes `task` the one a signal cancels; cancels it at once if a signal already came.
    func cancels(_ task: Task<[BatchOutcome], Never>) {
        let happened = state.withLock { state in
            state.task = task
            return state.happened
        }
        if happened { task.cancel() }
    }
}

extension Run {
    /// Makes the folders `job`'s output names, as aria2 makes them (curl with --create-dirs): `-o
    /// sub/x`, a list's `out=sub/x` or `dir=sub`, a Metalink file's names in folders of their own.
    @Sendable static func makeFolders(for job: CommandOptions.Job) {
        let folder: URL
        switch job.item.destination {
        case .file(let file): folder = file.deletingLastPathComponent()
        case .folder(let named): folder = named
        }
        // Each folder is looked at once per run: a list of hundreds of files into one folder would
        // otherwise look it up again for each.
        let path = folder.path(percentEncoded: false)
        guard foldersMade.withLock({ $0.insert(path).inserted }),
            !FileManager.default.fileExists(atPath: path)
        else { return }
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    /// The folders ``makeFolders(for:)`` has looked at in this run.
    private static let foldersMade = Mutex<Set<String>>([])

    /// Where the file at `index` goes: its download's destination once it has one, else the output
    /// path it was given (nil for a name the server was to give).
    static func plannedPath(of index: Int, in batch: Batch) -> String? {
        if let destination = batch.download(at: index)?.destination {
            return destination.path(percentEncoded: false)
        }
        guard case .file(let file) = batch.items[index].destination else { return nil }
        return file.path(percentEncoded: false)
    }
}
