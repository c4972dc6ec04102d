import Fastpull
import FastpullCommandLine
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Writes `--json` output: every event as one line of JSON on stdout, written at once (no buffering),
/// so a reader sees each event as it happens. The encoding is ``JSONEvents`` in the library.
final class JSONEventsWriter: Sendable {
    /// When the command started; every line's `elapsed` counts from here.
    let started: ContinuousClock.Instant
    /// Called once when stdout refuses a line (its reader went away): the run stops, saving what it
    /// has, since nobody is left to read what it says.
    let onClosed: @Sendable () -> Void
    private let closed = Atomic<Bool>(false)

    init(started: ContinuousClock.Instant, onClosed: @escaping @Sendable () -> Void = {}) {
        self.started = started
        self.onClosed = onClosed
    }

    /// Whether stdout was closed while the run wrote to it.
    var wasClosed: Bool { closed.load(ordering: .acquiring) }

    /// Writes the line for `event` of download `index`.
    func write(_ event: Event, index: Int, url: URL) {
        emit(JSONEvents.line(event, index: index, url: url, elapsed: elapsed))
    }

    /// Writes the run's last line.
    func summary(files: Int, succeeded: Int, failed: Int, exitCode: Int32, dryRun: Bool) {
        emit(
            JSONEvents.summary(
                files: files, succeeded: succeeded, failed: failed, exitCode: exitCode, elapsed: elapsed,
                dryRun: dryRun))
    }

    private var elapsed: Double {
        let parts = (ContinuousClock.now - started).components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    private func emit(_ line: String) {
        guard !closed.load(ordering: .acquiring) else { return }
        if !StandardStream.write(line + "\n", to: STDOUT_FILENO),
            !closed.exchange(true, ordering: .acquiringAndReleasing)
        {
            onClosed()
        }
    }
}
