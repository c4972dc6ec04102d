import Foundation

/// Draws throughput per tool per scenario as an SVG: one panel per scenario (each with its own scale),
/// a bar per tool variant at the median MB/s, a whisker from the slowest to the fastest run, the ideal as
/// a dashed line, and failures, skips and n/a written where the bar would be.
enum ThroughputChart {
    /// A categorical palette (colour-blind friendly order).
    static let palette = [
        "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
        "#17becf", "#393b79", "#637939",
    ]

    static func colour(index: Int) -> String { palette[index % palette.count] }

    /// One colour per program, so a tool's default and best variants match.
    static func colour(program: String) -> String {
        switch program {
        case "fastpull": palette[0]
        case "aria2c": palette[1]
        case "axel": palette[2]
        case "curl": palette[3]
        case "wget2": palette[4]
        case "URLSession": palette[5]
        default: palette[7]
        }
    }

    /// Round tick positions from 0 to `maximum` (steps of 1, 2 or 5 × 10^k; 4 to 10 ticks).
    static func ticks(upTo maximum: Double) -> [Double] {
        guard maximum > 0, maximum.isFinite else { return [0] }
        let rough = maximum / 6
        let magnitude = pow(10, floor(log10(rough)))
        let step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= rough } ?? magnitude * 10
        return stride(from: 0, through: maximum + step * 1e-9, by: step).map { $0 }
    }

    /// A tick label without trailing zeros.
    static func label(_ value: Double) -> String {
        if value == value.rounded() { return String(Int(value)) }
        return fixed(value, value < 0.1 ? 3 : (value < 1 ? 2 : 1))
    }

    /// The SVG document for `report`.
    static func svg(_ report: BenchReport) -> String {
        let left = 150.0
        let plotWidth = 620.0
        let right = 200.0
        let width = left + plotWidth + right
        let barHeight = 16.0
        let barGap = 6.0
        var parts: [String] = []
        var y = 76.0
        for scenario in report.scenarios where !scenario.tools.isEmpty {
            let idealRate = scenario.idealSeconds.map { Double(scenario.totalBytes) / $0 / 1e6 }
            let rates = scenario.tools.compactMap { tool -> Double? in
                guard let wall = tool.summary?.wall else { return nil }
                return Double(scenario.totalBytes) / wall.minimum / 1e6
            }
            let maximum = max((rates + [idealRate ?? 0]).max() ?? 1, 0.001) * 1.08
            func x(_ rate: Double) -> Double { left + rate / maximum * plotWidth }

            let title =
                "\(scenario.name) — \(mebibytes(scenario.fileSize))"
                + (scenario.fileCount > 1 ? " × \(scenario.fileCount)" : "") + ", \(scenario.server)"
            parts.append(
                "<text x=\"10\" y=\"\(y)\" font-size=\"14\" font-weight=\"bold\">\(xmlEscaped(title))</text>")
            y += 10
            let panelTop = y
            for tool in scenario.tools {
                let centre = y + barHeight / 2
                parts.append(
                    "<text x=\"\(left - 8)\" y=\"\(centre + 4)\" text-anchor=\"end\">\(xmlEscaped(tool.variant))</text>"
                )
                let colour = colour(program: tool.program)
                let opacity = tool.setting == .best ? "0.6" : "1"
                if let summary = tool.summary {
                    let rate = summary.megabytesPerSecond
                    let barWidth = max(x(rate) - left, 1)
                    parts.append(
                        "<rect x=\"\(left)\" y=\"\(y)\" width=\"\(fixed(barWidth, 1))\" height=\"\(barHeight)\" "
                            + "fill=\"\(colour)\" fill-opacity=\"\(opacity)\"><title>\(xmlEscaped(tool.variant)): "
                            + "median \(fixed(summary.wall.median, 3)) s, \(fixed(rate, 1)) MB/s</title></rect>"
                    )
                    let low = Double(scenario.totalBytes) / summary.wall.maximum / 1e6
                    let high = Double(scenario.totalBytes) / summary.wall.minimum / 1e6
                    if high - low > 0 {
                        parts.append(
                            "<path d=\"M\(fixed(x(low), 1)),\(fixed(centre, 1)) H\(fixed(x(high), 1)) "
                                + "M\(fixed(x(low), 1)),\(fixed(centre - 4, 1)) v8 M\(fixed(x(high), 1)),"
                                + "\(fixed(centre - 4, 1)) v8\" stroke=\"black\" stroke-width=\"1\" fill=\"none\"/>"
                        )
                    }
                    var text = "\(fixed(rate, rate < 10 ? 1 : 0)) MB/s · \(fixed(summary.wall.median, 2)) s"
                    if let refetched = summary.refetchedMiB {
                        text += " · re-fetched \(fixed(refetched, 0)) MiB"
                    }
                    if tool.status == .failed { text += " · FAIL \(summary.failures)/\(tool.samples.count)" }
                    parts.append(
                        "<text x=\"\(fixed(max(x(rate), x(high)) + 6, 1))\" y=\"\(centre + 4)\" "
                            + "fill=\"\(tool.status == .failed ? "#d62728" : "black")\">\(xmlEscaped(text))</text>"
                    )
                } else {
                    let text: String
                    let fill: String
                    switch tool.status {
                    case .failed:
                        text = "FAIL: \(tool.reason ?? "")"
                        fill = "#d62728"
                    case .notApplicable:
                        text = "n/a: \(tool.reason ?? "")"
                        fill = "#777"
                    case .skipped, .ok:
                        text = "skipped: \(tool.reason ?? "")"
                        fill = "#777"
                    }
                    parts.append(
                        "<text x=\"\(left + 4)\" y=\"\(centre + 4)\" fill=\"\(fill)\">"
                            + "\(xmlEscaped(text.count > 100 ? text.prefix(99) + "…" : text))</text>")
                }
                y += barHeight + barGap
            }
            if let idealRate {
                parts.append(
                    "<line x1=\"\(fixed(x(idealRate), 1))\" y1=\"\(panelTop - 4)\" x2=\"\(fixed(x(idealRate), 1))\" "
                        + "y2=\"\(fixed(y, 1))\" stroke=\"#333\" stroke-dasharray=\"5,4\"/>")
                parts.append(
                    "<text x=\"\(fixed(x(idealRate) + 4, 1))\" y=\"\(fixed(panelTop + 2, 1))\" font-size=\"10\" "
                        + "fill=\"#333\">ideal \(fixed(idealRate, 0)) MB/s</text>")
            }
            parts.append(
                "<line x1=\"\(left)\" y1=\"\(y)\" x2=\"\(left + plotWidth)\" y2=\"\(y)\" stroke=\"black\"/>")
            for tick in ticks(upTo: maximum) {
                parts.append(
                    "<line x1=\"\(fixed(x(tick), 1))\" y1=\"\(y)\" x2=\"\(fixed(x(tick), 1))\" y2=\"\(y + 4)\" "
                        + "stroke=\"black\"/><text x=\"\(fixed(x(tick), 1))\" y=\"\(y + 16)\" text-anchor=\"middle\" "
                        + "font-size=\"10\">\(label(tick))</text>")
            }
            parts.append(
                "<text x=\"\(left + plotWidth)\" y=\"\(y + 28)\" text-anchor=\"end\" font-size=\"10\">MB/s "
                    + "(10⁶ bytes per second; whiskers: slowest to fastest run)</text>")
            y += 52
        }
        let height = y + 10
        let header =
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" "
            + "viewBox=\"0 0 \(Int(width)) \(Int(height))\" font-family=\"sans-serif\" font-size=\"12\">\n"
            + "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
            + "<text x=\"10\" y=\"24\" font-size=\"18\" font-weight=\"bold\">Throughput per tool and scenario "
            + "(median of \(report.settings.runs) run\(report.settings.runs == 1 ? "" : "s"))</text>\n"
            + "<text x=\"10\" y=\"42\" fill=\"#555\">\(xmlEscaped(report.machine.cpu)), \(report.machine.cores) "
            + "cores · \(xmlEscaped(report.machine.date)) · commit \(xmlEscaped(report.machine.commit)) · "
            + "lighter bars: a tool's best settings</text>\n"
        return header + parts.joined(separator: "\n") + "\n</svg>\n"
    }
}
