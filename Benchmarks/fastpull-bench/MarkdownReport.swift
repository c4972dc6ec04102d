import Foundation

/// Writes `results.md`: the machine, date, commit and settings, then one table per scenario.
enum MarkdownReport {
    static func render(_ report: BenchReport, chart: String?) -> String {
        var lines: [String] = []
        let machine = report.machine
        let settings = report.settings
        lines.append("# fastpull-bench results")
        lines.append("")
        lines.append("Made with `\(settings.command)`.")
        lines.append("")
        lines.append("| | |")
        lines.append("|---|---|")
        lines.append(
            "| Machine | \(cellEscaped(machine.cpu)), \(machine.cores) cores, \(fixed(machine.memoryGiB, 0)) GiB, "
                + "\(machine.kernel) |")
        lines.append("| Date | \(machine.date) |")
        lines.append("| Commit | \(cellEscaped(machine.commit)) |")
        lines.append("| Swift | \(cellEscaped(machine.swift)) |")
        let warmup =
            settings.warmupRuns > 0 ? " after \(settings.warmupRuns) discarded warm-up" : ", no warm-up"
        lines.append(
            "| Settings | \(settings.runs) measured run\(settings.runs == 1 ? "" : "s") per tool\(warmup), "
                + "interleaved; medians\(settings.quick ? "; **--quick** (small files)" : "") |")
        lines.append(
            "| Load (1 min) | \(fixed(machine.loadAtStart, 2)) at start, "
                + "\(machine.loadAtEnd.map { fixed($0, 2) } ?? "?") at end |")
        lines.append("| Folders | tmpfs \(settings.tmpfsFolder), disk \(settings.diskFolder) |")
        for name in report.toolVersions.keys.sorted() {
            lines.append("| \(name) | \(cellEscaped(report.toolVersions[name] ?? "")) |")
        }
        lines.append("")
        lines.append(
            "Times are wall seconds from spawn to exit; MB/s is 10⁶ bytes per second of that time; CPU is the "
                + "child's user + system time; peak RSS from \(settings.peakRSSSource); server MiB is the body bytes the server "
                + "sent in the run (nginx access log or fixture server counters); conns is the connections the "
                + "server saw. *identical* compares every output byte with its source. × ideal and × fastpull "
                + "are ratios of median times (lower is better).")
        lines.append("")
        if !report.notes.isEmpty {
            lines.append("**Notes**")
            lines.append("")
            for note in report.notes { lines.append("- \(note)") }
            lines.append("")
        }
        if let chart {
            lines.append("![Throughput per tool and scenario](\(chart))")
            lines.append("")
        }
        for scenario in report.scenarios {
            lines += section(scenario, in: report)
        }
        lines.append("## Tool variants")
        lines.append("")
        lines.append("| variant | program | settings | how |")
        lines.append("|---|---|---|---|")
        var seen = Set<String>()
        for tool in report.scenarios.flatMap(\.tools) where seen.insert(tool.variant).inserted {
            lines.append(
                "| \(tool.variant) | \(tool.program) | \(tool.setting.rawValue) | \(cellEscaped(tool.settingsNote)) |"
            )
        }
        lines.append("")
        return lines.joined(separator: "\n")
    }

    /// For a resume scenario whose fresh counterpart ran in the same session: each tool's rerun rate
    /// over its fresh runs' rate (a resumed download should go as fast as a fresh one).
    private static func freshComparison(_ scenario: ScenarioResult, in report: BenchReport) -> [String] {
        guard let freshName = ScenarioTable.freshCounterparts[scenario.name],
            let fresh = report.scenarios.first(where: { $0.name == freshName })
        else { return [] }
        let ratios = scenario.tools.compactMap { tool -> String? in
            guard let rerun = tool.summary?.rerunMegabytesPerSecond,
                let freshRate = fresh.tools.first(where: { $0.variant == tool.variant })?.summary?
                    .megabytesPerSecond, freshRate > 0
            else { return nil }
            return "\(tool.variant) \(fixed(rerun / freshRate, 2))"
        }
        guard !ratios.isEmpty else { return [] }
        return [
            "Rerun rate ÷ fresh rate (\(freshName), this session): \(ratios.joined(separator: ", ")).", "",
        ]
    }

    private static func section(_ scenario: ScenarioResult, in report: BenchReport) -> [String] {
        var lines: [String] = []
        lines.append("## \(scenario.name)")
        lines.append("")
        lines.append(scenario.summary)
        lines.append("")
        var facts = [
            "Server: \(scenario.server)",
            "size: \(mebibytes(scenario.fileSize))"
                + (scenario.fileCount > 1 ? " × \(scenario.fileCount) files" : ""),
            "output: \(scenario.destination.rawValue) (\(scenario.outputFolder))",
        ]
        if let ideal = scenario.idealSeconds {
            facts.append("ideal: \(fixed(ideal, 2)) s (\(scenario.idealNote ?? ""))")
        } else {
            facts.append("no ideal time")
        }
        facts.append("scenario took \(fixed(scenario.wallSeconds, 0)) s")
        lines.append(facts.joined(separator: "; ") + ".")
        lines.append("")
        let resume =
            scenario.tools.contains { $0.summary?.rerunSeconds != nil }
            || scenario.name == "resume"
        if resume {
            lines.append(
                "| tool | setting | total s | spread | rerun s | rerun MB/s | interrupted at | re-fetched | × ideal "
                    + "| × fastpull | CPU s | peak RSS MiB | identical |")
            lines.append("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
        } else {
            lines.append(
                "| tool | setting | median s | spread | MB/s | × ideal | × fastpull | CPU s | peak RSS MiB "
                    + "| server MiB | conns | identical |")
            lines.append("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
        }
        for tool in scenario.tools {
            let name = tool.program == "fastpull" ? "**\(tool.variant)**" : tool.variant
            guard let summary = tool.summary else {
                let status: String
                switch tool.status {
                case .failed: status = "**FAIL** \(tool.samples.count)/\(tool.samples.count): "
                case .notApplicable: status = "n/a: "
                case .skipped, .ok: status = "skipped: "
                }
                let dashes = Array(repeating: "—", count: resume ? 10 : 9).joined(separator: " | ")
                lines.append(
                    "| \(name) | \(tool.setting.rawValue) | \(dashes) | \(status)\(cellEscaped(tool.reason ?? "")) |"
                )
                continue
            }
            let ideal = summary.ratioToIdeal.map { fixed($0, 2) } ?? "—"
            let versus = summary.ratioToFastpull.map { fixed($0, 2) } ?? "—"
            let identical =
                tool.status == .failed
                ? "**FAIL** \(summary.failures)/\(tool.samples.count): \(cellEscaped(tool.reason ?? ""))"
                : "yes"
            let spread = "±\(fixed(summary.wall.spreadPercent / 2, 0))%"
            if resume {
                lines.append(
                    "| \(name) | \(tool.setting.rawValue) | \(fixed(summary.wall.median, 2)) | \(spread) | "
                        + "\(summary.rerunSeconds.map { fixed($0, 2) } ?? "—") | "
                        + "\(summary.rerunMegabytesPerSecond.map { fixed($0, 0) } ?? "—") | "
                        + "\(summary.interruptedAtMiB.map { "\(fixed($0, 0)) MiB" } ?? "—") | "
                        + "\(summary.refetchedMiB.map { "\(fixed($0, 1)) MiB" } ?? "—") | \(ideal) | \(versus) | "
                        + "\(fixed(summary.cpuSeconds, 2)) | \(fixed(summary.peakRSSMiB, 0)) | \(identical) |"
                )
            } else {
                lines.append(
                    "| \(name) | \(tool.setting.rawValue) | \(fixed(summary.wall.median, 2)) | \(spread) | "
                        + "\(fixed(summary.megabytesPerSecond, 0)) | \(ideal) | \(versus) | "
                        + "\(fixed(summary.cpuSeconds, 2)) | \(fixed(summary.peakRSSMiB, 0)) | "
                        + "\(fixed(summary.serverMiB, 0)) | \(summary.connections) | \(identical) |")
            }
        }
        lines.append("")
        let bySource = scenario.tools.compactMap { tool in
            tool.summary.flatMap { $0.serverMiBBySource.isEmpty ? nil : (tool.variant, $0) }
        }
        if !bySource.isEmpty {
            lines.append("What each mirror sent (median MiB; the file is \(mebibytes(scenario.fileSize))):")
            lines.append("")
            for (variant, summary) in bySource {
                let parts = summary.serverMiBBySource.sorted { $0.key < $1.key }.map {
                    "\(cellEscaped($0.key)) \(fixed($0.value, 1))"
                }
                let refused = summary.refused > 0 ? "; \(summary.refused) requests refused (503)" : ""
                lines.append("- \(variant): \(parts.joined(separator: ", "))\(refused)")
            }
            lines.append("")
        }
        if scenario.tools.contains(where: { $0.summary?.rerunSeconds != nil }) {
            lines.append(
                "*total* is both parts (until SIGINT, then the rerun); *rerun MB/s* is what the server sent the "
                    + "rerun over its time; *re-fetched* is everything the server sent minus the file size.")
            lines.append("")
            lines += freshComparison(scenario, in: report)
        }
        for note in scenario.notes { lines.append("- \(note)") }
        if let chart = scenario.timelineChart {
            lines.append("")
            lines.append("![fastpull connections over time in \(scenario.name)](\(chart))")
        }
        if !scenario.notes.isEmpty || scenario.timelineChart != nil { lines.append("") }
        return lines
    }
}
