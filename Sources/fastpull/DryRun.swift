import Fastpull
import FastpullCommandLine
import FastpullHTTP
import FoundationEssentials
import Glibc

/// `--dry-run`: probes every URL and prints what a download would do (size, validators, ranges, the
/// digests the server offers, the output path and the segments) on stdout, fetching nothing and
/// writing nothing. With `--json` it prints the `probe` and `plan` events (or `failed`) instead.
struct DryRun {
    let jobs: [CommandOptions.Job]
    let options: CommandOptions
    let started: ContinuousClock.Instant

    func run() async -> Int32 {
        let json = options.json ? JSONEventsWriter(started: started) : nil
        var firstFailure: Int32?
        var failed = 0
        for (index, job) in jobs.enumerated() {
            let item = job.item
            let configuration = item.configuration ?? options.configuration
            // Planned at the output a run would write (its name from the URL until the server names
            // it): an interrupted download there is what a run would resume.
            var output = Self.output(of: item, contentDisposition: nil)
            do {
                var plan = try await Download(from: item.url, to: output, configuration: configuration).plan()
                let named = Self.output(of: item, contentDisposition: plan.probe.contentDisposition)
                if named != output {
                    output = named
                    plan = try await Download(from: item.url, to: output, configuration: configuration).plan()
                }
                json?.write(.probe(plan.probe), index: index, url: item.url)
                json?.write(.plan(plan), index: index, url: item.url)
                if json == nil {
                    // The server's words (its disposition, its validators) and the path it names, escaped.
                    print(
                        describe(plan, item: item, index: index).split(separator: "\n").map(
                            \.escapedForTerminal
                        )
                        .joined(separator: "\n"))
                }
            } catch let failure {
                failed += 1
                firstFailure = firstFailure ?? failure.code.rawValue
                json?.write(.failed(failure), index: index, url: item.url)
                FastpullCommand.printError("error: \(failure.commandLineMessage)")
            }
        }
        let code = firstFailure ?? 0
        json?.summary(
            files: jobs.count, succeeded: jobs.count - failed, failed: failed, exitCode: code, dryRun: true)
        return code
    }

    /// Where a run would write `item`.
    static func output(of item: BatchItem, contentDisposition: String?) -> URL {
        switch item.destination {
        case .file(let file): return file
        case .folder(let folder):
            return folder.appendingPathComponent(
                OutputName.derive(from: item.url, contentDisposition: contentDisposition))
        }
    }

    /// What a run would do with the file already at `path`, as the real run decides it: nil when
    /// none is there.
    func existing(_ path: String, item: BatchItem, probe: Event.Probe) -> String? {
        guard FileSystem.isRegularFile(path), let length = FileSystem.size(path) else { return nil }
        let configuration = item.configuration ?? options.configuration
        if options.force { return "exists; fetched again, and replaced once verified" }
        if options.noClobber { return "exists; kept as it is (--no-clobber)" }
        if options.autoRename {
            return "exists; saved beside it as \(FileSystem.split(path).name).1 or the next free number"
        }
        if let record = OriginRecord.read(path: path), record.url == item.url.redactedForDisplay,
            OriginRecord.fileIsAsSaved(path, record: record)
        {
            switch record.describes(size: probe.size, etag: probe.etag, lastModified: probe.lastModified) {
            case true?: return "already complete and unchanged on the server; a run downloads nothing"
            case false?:
                return "saved earlier, changed on the server since; a run fetches it again in its place"
            case nil: break
            }
        }
        if !configuration.knownChecksums.isEmpty {
            return "exists; kept if it matches its checksum, else refused without --force"
        }
        if configuration.resume.adoptsPartialFile {
            return
                "exists; continued from its \(ByteFormat.size(length)) if its last 64 KiB match the server's"
        }
        return "exists; refused without --force"
    }

    /// The plan as lines of `label  value`.
    func describe(_ plan: Event.Plan, item: BatchItem, index: Int) -> String {
        let probe = plan.probe
        var rows: [(String, String)] = []
        if probe.finalURL != probe.url { rows.append(("final URL", probe.finalURL.redactedForDisplay)) }
        rows.append(("size", probe.size.map { "\(ByteFormat.size($0)) (\($0) bytes)" } ?? "unknown"))
        rows.append(("ranges", probe.acceptsRanges ? "yes" : "no (one connection, no resume)"))
        rows.append(("etag", probe.etag ?? "none"))
        rows.append(("last-modified", probe.lastModified ?? "none"))
        if let disposition = probe.contentDisposition { rows.append(("disposition", disposition)) }
        let offered = probe.offeredDigests.map { "\($0.checksum) (\($0.header))" }
        rows.append(("digests", offered.isEmpty ? "none offered" : offered.joined(separator: ", ")))
        for ignored in probe.ignoredDigests {
            rows.append(("ignored", "\(ignored.header): \(ignored.reason)"))
        }
        let path = Self.output(of: item, contentDisposition: probe.contentDisposition).path(
            percentEncoded: false)
        rows.append(("output", path + (existing(path, item: item, probe: probe).map { " (\($0))" } ?? "")))
        if plan.resumedBytes > 0 {
            rows.append(
                (
                    "resumes",
                    "\(ByteFormat.size(plan.resumedBytes)) already in \(FileSystem.split(path).name).part"
                ))
        }
        if let first = plan.segments.first {
            let largest = plan.segments.map { $0.upperBound - $0.lowerBound }.max() ?? 0
            let sizes =
                plan.segments.count == 1
                ? "1 segment of \(ByteFormat.size(largest))"
                : "\(plan.segments.count) segments of up to \(ByteFormat.size(largest)) "
                    + "(first \(first.lowerBound)-\(first.upperBound - 1))"
            let connections = "\(plan.connections) connection\(plan.connections == 1 ? "" : "s")"
            let how = configurationDescription(item.configuration ?? options.configuration)
            rows.append(("plan", "\(sizes) over up to \(connections)\(how)"))
        } else {
            rows.append(("plan", "one streaming connection (size unknown)"))
        }
        let header =
            jobs.count > 1
            ? "[\(index + 1)/\(jobs.count)] \(item.url.redactedForDisplay)" : item.url.redactedForDisplay
        return ([header] + rows.map { "  " + $0.0.padded(to: 15) + $0.1 })
            .joined(separator: "\n")
    }

    private func configurationDescription(_ configuration: Configuration) -> String {
        if case .automatic = configuration.connections.count {
            return " (auto: starts with a few, adds while it helps)"
        }
        return ""
    }
}
