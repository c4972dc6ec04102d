/// Draws a per-connection timeline from a trace: one lane per connection, a bar per range it fetched
/// (coloured by connection, labelled with the range), steals, hedges and retries marked.
enum TimelineChart {
    /// A bar: a connection fetching a range from `begin` to `finish` seconds.
    struct Bar: Equatable {
        var connection: Int
        var begin: Double
        var finish: Double
        var start: Int64?
        var end: Int64?
    }

    /// Pairs begin and end events per connection into bars (an unfinished bar ends at the last event).
    static func bars(from events: [TraceEvent]) -> [Bar] {
        var open: [Int: Bar] = [:]
        var bars: [Bar] = []
        let last = events.map(\.time).max() ?? 0
        for event in events {
            guard let connection = event.connection else { continue }
            switch event.kind {
            case .begin:
                if var previous = open.removeValue(forKey: connection) {
                    previous.finish = event.time
                    bars.append(previous)
                }
                open[connection] = Bar(
                    connection: connection, begin: event.time, finish: event.time, start: event.start,
                    end: event.end)
            case .end:
                if var bar = open.removeValue(forKey: connection) {
                    bar.finish = event.time
                    if let first = bar.start, let bytes = event.bytes {
                        bar.end = first + bytes
                    } else if let end = event.end, bar.start != nil {
                        bar.end = end
                    }
                    bars.append(bar)
                }
            case .progress:
                if open[connection] == nil {
                    open[connection] = Bar(
                        connection: connection, begin: event.time, finish: event.time, start: event.start,
                        end: event.end)
                }
            case .steal, .hedge, .retry, .other:
                break
            }
        }
        for (_, var bar) in open {
            bar.finish = last
            bars.append(bar)
        }
        return bars.sorted { ($0.connection, $0.begin) < ($1.connection, $1.begin) }
    }

    /// The SVG document.
    static func svg(events: [TraceEvent], title: String, subtitle: String) -> String {
        let bars = bars(from: events)
        let connections = Array(Set(events.compactMap(\.connection))).sorted()
        let duration = max(events.map(\.time).max() ?? 0, 0.001)
        let left = 90.0
        let right = 30.0
        let top = 64.0
        let lane = 26.0
        let plotWidth = 900.0
        let width = left + plotWidth + right
        let height = top + lane * Double(max(connections.count, 1)) + 70
        func x(_ time: Double) -> Double { left + time / duration * plotWidth }
        func y(_ connection: Int?) -> Double {
            top + lane * Double(connection.flatMap { connections.firstIndex(of: $0) } ?? 0)
        }

        var parts: [String] = []
        parts.append(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" "
                + "viewBox=\"0 0 \(Int(width)) \(Int(height))\" font-family=\"sans-serif\" font-size=\"12\">")
        parts.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>")
        parts.append(
            "<text x=\"\(left)\" y=\"22\" font-size=\"16\" font-weight=\"bold\">\(xmlEscaped(title))</text>")
        parts.append("<text x=\"\(left)\" y=\"40\" fill=\"#555\">\(xmlEscaped(subtitle))</text>")
        for (index, connection) in connections.enumerated() {
            let top = y(connection)
            if index % 2 == 0 {
                parts.append(
                    "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(plotWidth)\" height=\"\(lane)\" fill=\"#f4f4f4\"/>"
                )
            }
            parts.append(
                "<text x=\"\(left - 8)\" y=\"\(top + lane / 2 + 4)\" text-anchor=\"end\">conn \(connection)</text>"
            )
        }
        for bar in bars {
            let start = x(bar.begin)
            let barWidth = max(x(bar.finish) - start, 1.5)
            let colour = ThroughputChart.colour(index: connections.firstIndex(of: bar.connection) ?? 0)
            var label = ""
            if let first = bar.start, let end = bar.end {
                label = "\(fixed(Double(first) / 1_048_576, 0))–\(fixed(Double(end) / 1_048_576, 0)) MiB"
            }
            parts.append(
                "<rect x=\"\(fixed(start, 1))\" y=\"\(y(bar.connection) + 4)\" width=\"\(fixed(barWidth, 1))\" "
                    + "height=\"\(lane - 8)\" rx=\"2\" fill=\"\(colour)\" stroke=\"white\" stroke-width=\"0.5\">"
                    + "<title>conn \(bar.connection): \(xmlEscaped(label)) \(fixed(bar.begin, 3))–"
                    + "\(fixed(bar.finish, 3)) s</title></rect>")
            if !label.isEmpty && barWidth > Double(label.count) * 6.5 {
                parts.append(
                    "<text x=\"\(fixed(start + 4, 1))\" y=\"\(y(bar.connection) + lane / 2 + 4)\" fill=\"white\" "
                        + "font-size=\"10\">\(xmlEscaped(label))</text>")
            }
        }
        for event in events where event.connection != nil {
            let cx = x(event.time)
            let cy = y(event.connection) + lane / 2
            switch event.origin ?? event.kind {
            case .steal:
                parts.append(
                    "<polygon points=\"\(fixed(cx, 1)),\(fixed(cy - 9, 1)) \(fixed(cx - 6, 1)),\(fixed(cy + 5, 1)) "
                        + "\(fixed(cx + 6, 1)),\(fixed(cy + 5, 1))\" fill=\"#f28e00\" stroke=\"black\" "
                        + "stroke-width=\"0.6\"><title>steal at \(fixed(event.time, 3)) s</title></polygon>")
            case .hedge:
                parts.append(
                    "<circle cx=\"\(fixed(cx, 1))\" cy=\"\(fixed(cy, 1))\" r=\"5\" fill=\"#8e44ad\" stroke=\"black\" "
                        + "stroke-width=\"0.6\"><title>hedge at \(fixed(event.time, 3)) s</title></circle>")
            case .retry:
                parts.append(
                    "<path d=\"M\(fixed(cx - 5, 1)),\(fixed(cy - 5, 1)) l10,10 m0,-10 l-10,10\" stroke=\"#d62728\" "
                        + "stroke-width=\"2.5\"><title>retry at \(fixed(event.time, 3)) s</title></path>")
            case .begin, .end, .progress, .other:
                break
            }
        }
        // Time axis.
        let axisY = top + lane * Double(max(connections.count, 1)) + 6
        parts.append(
            "<line x1=\"\(left)\" y1=\"\(axisY)\" x2=\"\(left + plotWidth)\" y2=\"\(axisY)\" stroke=\"black\"/>"
        )
        for tick in ThroughputChart.ticks(upTo: duration) {
            let tx = x(tick)
            parts.append(
                "<line x1=\"\(fixed(tx, 1))\" y1=\"\(axisY)\" x2=\"\(fixed(tx, 1))\" y2=\"\(axisY + 5)\" stroke=\"black\"/>"
            )
            parts.append(
                "<text x=\"\(fixed(tx, 1))\" y=\"\(axisY + 18)\" text-anchor=\"middle\">\(ThroughputChart.label(tick))</text>"
            )
        }
        parts.append(
            "<text x=\"\(left + plotWidth / 2)\" y=\"\(axisY + 36)\" text-anchor=\"middle\">seconds since start</text>"
        )
        let legendY = axisY + 52
        parts.append(
            "<polygon points=\"\(left),\(legendY + 4) \(left + 5),\(legendY - 6) \(left + 10),\(legendY + 4)\" "
                + "fill=\"#f28e00\"/><text x=\"\(left + 16)\" y=\"\(legendY + 3)\">steal / split</text>")
        parts.append(
            "<circle cx=\"\(left + 125)\" cy=\"\(legendY)\" r=\"5\" fill=\"#8e44ad\"/>"
                + "<text x=\"\(left + 135)\" y=\"\(legendY + 3)\">hedge</text>")
        parts.append(
            "<path d=\"M\(left + 195),\(legendY - 5) l10,10 m0,-10 l-10,10\" stroke=\"#d62728\" stroke-width=\"2.5\"/>"
                + "<text x=\"\(left + 212)\" y=\"\(legendY + 3)\">retry / stall / reset</text>")
        parts.append("</svg>")
        return parts.joined(separator: "\n") + "\n"
    }
}
