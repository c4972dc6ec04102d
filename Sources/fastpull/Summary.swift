import Fastpull
import FastpullCommandLine
import FastpullHTTP
import FoundationEssentials

/// The human lines on stderr: notes while a download runs, the one-line summary of a saved file, each
/// file's outcome in a batch, and the batch's tally.
enum Summary {
    /// The note for an event, or nil for events that only the progress display and `--json` show.
    static func note(for event: Event) -> String? {
        switch event.detail {
        case .resumed(let kept, let total):
            return "resuming: \(ByteFormat.size(kept)) of \(ByteFormat.size(total)) already downloaded"
        case .restarting(let reason):
            return "starting over: \(reason)"
        case .warning(let text):
            return "warning: \(text)"
        case .sourceDropped(let url, let reason):
            return "warning: no longer using \(url.redactedForDisplay): \(reason)"
        case .pieceFailed(let offset, let length, let sources):
            let from =
                sources.isEmpty ? "" : " from \(sources.map(\.redactedForDisplay).joined(separator: ", "))"
            return
                "warning: bytes \(offset)-\(offset + length - 1)\(from) do not match their piece hash; fetching them again"
        case .probe, .plan, .progress, .retry, .steal, .connections, .verified, .finished, .failed, .exchange:
            return nil
        }
    }

    /// `saved x.iso (1.0 GiB) in 0.85s, 1.2 GiB/s, 8 connections, sha256 9f86…(all 64 digits), md5 9e10…
    /// (checksum verified: sha256 from --checksum, md5 from x-goog-hash header, 0.004s after the last
    /// byte)`: the SHA-256 in full where it was computed (`--sha256`, or a SHA-256 to verify), so that it
    /// can be compared with a published one; other digests shortened. Or for a file
    /// that was already in place `x.iso is already here (1.0 GiB) and matches sha256 from --checksum;
    /// nothing downloaded`, or, kept by its record, `x.iso is already complete (1.0 GiB) and unchanged
    /// on the server; nothing downloaded (its size and time as recorded; …)` (with `, sha256 9f86… (read
    /// from the file now)` instead when asked).
    static func saved(_ report: Report, alreadyPresent: Bool) -> String {
        var verified: [String] = []
        for check in report.checks {
            if case .matched = check.verdict, let expected = check.expected {
                verified.append("\(expected.algorithm) from \(check.source.commandLineName)")
            }
        }
        if alreadyPresent {
            if report.keptAsFound { return keptAsFound(report.outputPath, size: report.size) }
            guard !verified.isEmpty else {
                // Kept by its origin record: the server still offers the version saved. A SHA-256 asked
                // for was computed from the file now.
                // Not hashed, it is trusted by its size and time: the line says so, and how not to.
                let sha256 =
                    report.sha256.isEmpty
                    ? " (its size and time as recorded; --verify re-hashes it, --force fetches it again)"
                    : ", sha256 \(report.sha256) (read from the file now)"
                return
                    "\(report.outputPath) is already complete (\(ByteFormat.size(report.size))) and unchanged "
                    + "on the server; nothing downloaded\(sha256)"
            }
            return "\(report.outputPath) is already here (\(ByteFormat.size(report.size))) and matches "
                + "\(verified.joined(separator: ", ")); nothing downloaded"
        }
        var digests = report.sha256.isEmpty ? [] : ["sha256 \(report.sha256)"]
        for (name, hex) in report.digests.sorted(by: { $0.key < $1.key }) where name != "sha256" {
            digests.append("\(name) \(short(hex))")
        }
        let verification =
            verified.isEmpty
            ? ""
            : " (checksum verified: \(verified.joined(separator: ", ")), "
                + "\(ByteFormat.printf("%.3f", report.hashTailSeconds))s after the last byte)"
        let resumed = report.resumedBytes > 0 ? ", resumed after \(ByteFormat.size(report.resumedBytes))" : ""
        return "saved \(report.outputPath) (\(ByteFormat.size(report.size))) in "
            + "\(ByteFormat.printf("%.2f", report.seconds))s, \(ByteFormat.speed(report.bytesPerSecond)), "
            + (report.connections == 1 ? "1 connection" : "up to \(report.connections) connections")
            + digests.map { ", " + $0 }.joined() + "\(verification)\(resumed)\(sources(report.sources))"
    }

    /// `; from 3 sources: a.example 180.0 MiB, b.example 76.0 MiB, c.example 0 B (dropped: …)`, or
    /// nothing for a download from one.
    static func sources(_ sources: [Report.SourceUse]) -> String {
        guard !sources.isEmpty else { return "" }
        let parts = sources.map { source in
            let name = source.url.host.map { host in source.url.port.map { "\(host):\($0)" } ?? host } ?? "?"
            let dropped = source.dropped.map { " (dropped: \($0))" } ?? ""
            return "\(name) \(ByteFormat.size(source.bytes))\(dropped)"
        }
        return "; from \(sources.count) sources: " + parts.joined(separator: ", ")
    }

    /// The lines `--verbose` adds for an event: request heads (`> `) and response heads (`< `), each
    /// retry with its reason and delay, and every change of the connection count.
    static func verboseLines(for event: Event) -> [String] {
        switch event.detail {
        case .exchange(let exchange):
            return exchange.request.map { "> " + $0 } + exchange.response.map { "< " + $0 }
        case .retry(let connection, let reason, let delay):
            return ["* connection \(connection) retries in \(ByteFormat.printf("%.1f", delay)) s: \(reason)"]
        case .connections(let count):
            return ["* connections: \(count)"]
        case .steal(let from, let to, let offset, let end, let hedged):
            return [
                "* connection \(to) takes bytes \(offset)-\(end - 1) from connection \(from)\(hedged ? " (hedged)" : "")"
            ]
        default:
            return []
        }
    }

    /// `error: …` for a failure; for a stop the user chose (Ctrl-C, a signal) `stopped: …`, which is no
    /// error.
    static func failureLine(_ error: FastpullError) -> String {
        let message = error.commandLineMessage
        guard error.code == .interrupted else { return "error: \(message)" }
        let prefix = "interrupted with "
        guard message.hasPrefix(prefix) else { return "stopped: \(message)" }
        return "stopped with " + message.dropFirst(prefix.count)
    }

    /// A digest as the summary shows it: its first 16 hex digits (64 bits, plenty to tell files apart
    /// by eye) and `…`; the whole digest is in `--json` and the library's report.
    static func short(_ hex: String) -> String {
        hex.count > 16 ? String(hex.prefix(16)) + "…" : hex
    }

    /// `10 s`, `2.5 s`: a duration as a person gave it.
    static func seconds(_ duration: Duration) -> String {
        let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }

    /// `x is already there (3 B): kept as it is (--no-clobber); nothing downloaded`.
    static func keptAsFound(_ path: String, size: Int64) -> String {
        "\(path) is already there (\(ByteFormat.size(size))): kept as it is (--no-clobber); nothing downloaded"
    }

    /// A batch file's outcome: `[2/3] saved …` or `[2/3] error: … (https://…)`.
    static func outcome(_ outcome: BatchOutcome, count: Int) -> String {
        let label = "[\(outcome.index + 1)/\(count)]"
        switch outcome.result {
        case .success(let report):
            return "\(label) " + saved(report, alreadyPresent: outcome.alreadyPresent)
        case .failure(let error):
            return failed(error, index: outcome.index, count: count, url: outcome.item.url)
        }
    }

    /// A file's outcome as it happens in a batch: `saved x.iso (1.0 GiB) in 3.2s`, or `x.iso is
    /// already here (1.0 GiB); nothing downloaded` (the end's line says more: digests, checks).
    static func finished(_ finished: Event.Finished) -> String {
        finished.keptAsFound
            ? keptAsFound(finished.outputPath, size: finished.size)
            : finished.alreadyPresent
                ? "\(finished.outputPath) is already here (\(ByteFormat.size(finished.size))); nothing downloaded"
                : "saved \(finished.outputPath) (\(ByteFormat.size(finished.size))) in \(ByteFormat.printf("%.2f", finished.seconds))s"
    }

    /// A file's failure as it happens in a batch: `[2/3] error: HTTP 404 … (URL)`.
    static func failed(_ error: FastpullError, index: Int, count: Int, url: URL) -> String {
        let shown = url.redactedForDisplay
        let named = error.message.contains(shown) ? "" : " (\(shown))"
        return "[\(index + 1)/\(count)] \(failureLine(error))\(named)"
    }

    /// `3 files: 2 saved, 1 failed; exit 4, the code of [2/3]`; a file a signal stopped is `stopped`,
    /// not failed (`5 files: 1 saved, 1 failed, 3 stopped; exit 130, stopped by a signal`).
    static func tally(_ outcomes: [BatchOutcome], exitCode: Int32, expired: Bool = false) -> String {
        let stopped = outcomes.filter { $0.error?.code == .interrupted }
        let failed = outcomes.filter { $0.error != nil && $0.error?.code != .interrupted }
        let kept = outcomes.filter(\.alreadyPresent).count
        let saved = outcomes.count - failed.count - stopped.count - kept
        var text = "\(outcomes.count) files: \(saved) saved"
        if kept > 0 { text += ", \(kept) already here" }
        if !failed.isEmpty { text += ", \(failed.count) failed" }
        if !stopped.isEmpty { text += ", \(stopped.count) stopped" }
        if expired {
            text += "; exit \(exitCode), stopped by --max-time (run the same command to resume)"
        } else if exitCode == FastpullError.Code.interrupted.rawValue {
            text += "; exit \(exitCode), stopped by a signal (run the same command to resume)"
        } else if let culprit = failed.first(where: { $0.error?.code.rawValue == exitCode }) ?? failed.first {
            text += "; exit \(exitCode), the code of [\(culprit.index + 1)/\(outcomes.count)]"
        }
        return text
    }
}
