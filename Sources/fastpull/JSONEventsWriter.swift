import Fastpull
import Foundation

/// Writes `--json` output: every event as one line of JSON on stdout, written at once (no buffering),
/// so a reader sees each event as it happens. The encoding is ``JSONEvents`` in the library.
struct JSONEventsWriter: Sendable {
    /// When the command started; every line's `elapsed` counts from here.
    let started: ContinuousClock.Instant

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
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
