import Fastpull
import FastpullCommandLine
import FoundationEssentials
import Synchronization

/// The progress display on stderr.
///
/// On a terminal it redraws a live block at most ten times a second: for one file a line with
/// percent, bytes, speed, ETA and connections plus a segment map of the parts already in place; for
/// a batch one line per active file and a total. The window's width is read at every redraw and every
/// line is cut to fit it, so nothing wraps. Elsewhere (a pipe, a log file) it prints a plain line per
/// active file every few seconds.
struct ProgressView {
    let batch: Batch
    let board: Board
    let console: Console
    let interactive: Bool
    let color: Bool
    let unicode: Bool

    /// Seconds between plain lines when stderr is not a terminal.
    static let plainInterval: Duration = .seconds(3)
    /// Time between redraws on a terminal: at most ten a second.
    static let liveInterval: Duration = .milliseconds(100)

    /// Redraws until cancelled.
    func run() async {
        var meters: [Int: SpeedMeter] = [:]
        var total = SpeedMeter()
        var lastPlain = ContinuousClock.now
        while !Task.isCancelled {
            try? await Task.sleep(for: interactive ? Self.liveInterval : Self.plainInterval / 6)
            if Task.isCancelled { return }
            let now = ContinuousClock.now
            var rows: [Row] = []
            var totalBytes: Int64 = 0
            for index in board.active {
                guard let download = batch.download(at: index) else { continue }
                let progress = download.progress
                meters[index, default: SpeedMeter()].add(bytes: progress.bytesWritten, at: now)
                totalBytes += progress.bytesWritten
                rows.append(
                    Row(
                        name: download.destination.lastPathComponent.escapedForTerminal, progress: progress,
                        speed: meters[index]?.bytesPerSecond ?? 0, index: index))
            }
            total.add(bytes: totalBytes + board.finishedBytes, at: now)
            if interactive {
                console.draw(lines(rows, totalSpeed: total.bytesPerSecond))
            } else if now - lastPlain >= Self.plainInterval, !rows.isEmpty {
                lastPlain = now
                for row in rows {
                    let prefix = board.isBatch ? "[\(row.index + 1)/\(board.count)] " : ""
                    console.note(prefix + Self.line(row, width: 200, withName: true))
                }
            }
        }
    }

    /// One active file as the view shows it.
    struct Row {
        var name: String
        var progress: TransferProgress
        var speed: Double
        var index: Int
    }

    /// The live block for this moment.
    func lines(_ rows: [Row], totalSpeed: Double) -> [String] {
        let (columns, windowRows) = Terminal.size
        let width = max(columns - 1, 10)
        // `-i -` before its first line: nothing to show yet.
        if board.count == 0 { return [] }
        if !board.isBatch {
            guard let row = rows.first else { return [] }
            var lines = [Self.line(row, width: width, withName: columns >= 100)]
            if row.progress.totalBytes != nil, let download = batch.download(at: row.index) {
                lines.append(
                    Self.map(download.completionMap(cells: width - 2), color: color, unicode: unicode))
            }
            return lines
        }
        let room = max(windowRows - 2, 1)
        let count = board.count
        let label = "[\(count)/\(count)]".count
        let nameWidth = min(rows.map(\.name.count).max() ?? 4, max(width / 3 - label, 4))
        var lines = rows.prefix(room).map {
            Self.batchLine($0, width: width, count: count, nameWidth: nameWidth)
        }
        if rows.count > room { lines.append("  … and \(rows.count - room) more active") }
        lines.append(Self.fit(board.totalLine(speed: totalSpeed), width: width))
        return lines
    }

    /// The line of one file: the widest form that fits `width` columns, dropping the least useful
    /// parts first (name, connections, ETA, speed) and then cutting.
    static func line(_ row: Row, width: Int, withName: Bool) -> String {
        let progress = row.progress
        // Nothing moves while every connection waits for a retry: say so, and why.
        if let retry = progress.waitingToRetry, progress.activeConnections == 0 {
            var parts: [String] = withName ? [row.name] : []
            if let percent = progress.fraction.map({ ByteFormat.printf("%3.0f%%", $0 * 100) }) {
                parts.append(percent)
            }
            parts.append(
                "retrying in \(ByteFormat.printf("%.1f", retry.secondsLeft)) s (\(retry.attempt)/\(retry.retries)): "
                    + retry.reason)
            return fit(parts.joined(separator: "  "), width: width)
        }
        let percent = progress.fraction.map { ByteFormat.printf("%3.0f%%", $0 * 100) }
        let eta: Double? = {
            guard let total = progress.totalBytes, row.speed > 0 else { return nil }
            return Double(max(total - progress.bytesWritten, 0)) / row.speed
        }()
        var wide: [String?] = [withName ? row.name : nil, percent]
        var bytes = ByteFormat.size(progress.bytesWritten)
        if let total = progress.totalBytes { bytes += " / " + ByteFormat.size(total) }
        wide += [
            bytes, ByteFormat.speed(row.speed), eta.map { "ETA " + ByteFormat.duration($0) },
            "\(progress.activeConnections) conn",
        ]
        let full = wide.compactMap { $0 }.joined(separator: "  ")
        if full.count <= width { return full }

        var compactBytes = ByteFormat.compact(progress.bytesWritten)
        if let total = progress.totalBytes { compactBytes += "/" + ByteFormat.compact(total) }
        // Dropped from the end first: connections, ETA, speed.
        var parts: [String] = [percent, compactBytes].compactMap { $0 }
        let optional: [String] = [
            ByteFormat.compact(Int64(max(row.speed, 0))) + "/s",
            eta.map { "ETA " + ByteFormat.duration($0) } ?? "",
            "\(progress.activeConnections)c",
        ]
        for part in optional where !part.isEmpty {
            let candidate = (parts + [part]).joined(separator: " ")
            if candidate.count <= width { parts.append(part) } else { break }
        }
        return fit(parts.joined(separator: " "), width: width)
    }

    /// A batch line: `[2/5] name  45%  …`, the name cut or padded to `nameWidth`.
    static func batchLine(_ row: Row, width: Int, count: Int, nameWidth: Int) -> String {
        let label = "[\(row.index + 1)/\(count)]".padded(to: "[\(count)/\(count)]".count)
        let name =
            row.name.count > nameWidth
            ? String(row.name.prefix(max(nameWidth - 1, 1))) + "…"
            : row.name.padded(to: nameWidth)
        let rest = line(row, width: max(width - label.count - nameWidth - 3, 10), withName: false)
        return fit("\(label) \(name)  \(rest)", width: width)
    }

    /// The segment map: one cell per part of the file, full when the part is in place.
    static func map(_ cells: [Double], color: Bool, unicode: Bool) -> String {
        let glyphs: (full: String, most: String, some: String, none: String) =
            unicode ? ("█", "▓", "▒", "░") : ("#", "=", "-", ".")
        var text = "["
        var current = ""
        func paint(_ code: String) {
            guard color, code != current else { return }
            text += "\u{1B}[\(code)m"
            current = code
        }
        for cell in cells {
            switch cell {
            case 1...:
                paint("32")
                text += glyphs.full
            case 0.5..<1:
                paint("33")
                text += glyphs.most
            case let value where value > 0:
                paint("33")
                text += glyphs.some
            default:
                paint("0")
                text += glyphs.none
            }
        }
        if color { text += "\u{1B}[0m" }
        return text + "]"
    }

    /// `text` cut to `width` characters.
    static func fit(_ text: String, width: Int) -> String {
        text.count <= width ? text : String(text.prefix(max(width - 1, 1))) + "…"
    }
}

/// Which files of a run are waiting, active or done, kept by the event listener and read by the
/// progress view.
final class Board: Sendable {
    private struct State {
        var done: Set<Int> = []
        var failed = 0
        var finishedBytes: Int64 = 0
    }

    /// How many files the run has (so far, while `-i -` adds more).
    var count: Int { batch.items.count }
    /// Whether the run shows as a batch: more than one file, or files still coming (`-i -`).
    let isBatch: Bool
    private let batch: Batch
    private let state = Mutex(State())

    init(batch: Batch) {
        self.batch = batch
        isBatch = batch.items.count > 1 || batch.isOpen
    }

    /// A file finished (or failed) with `bytes` in place.
    func finish(_ index: Int, bytes: Int64, failed: Bool) {
        state.withLock { state in
            guard state.done.insert(index).inserted else { return }
            state.finishedBytes += bytes
            if failed { state.failed += 1 }
        }
    }

    /// Files whose download has started and not ended, in order.
    var active: [Int] {
        let done = state.withLock { $0.done }
        return (0..<count).filter { !done.contains($0) && batch.download(at: $0) != nil }
    }

    /// Bytes of the files that ended.
    var finishedBytes: Int64 { state.withLock { $0.finishedBytes } }

    /// `total  2/5 done, 1 failed  123.0 MiB/s`.
    func totalLine(speed: Double) -> String {
        let (done, failed) = state.withLock { ($0.done.count, $0.failed) }
        let failures = failed > 0 ? ", \(failed) failed" : ""
        return "total  \(done)/\(count) done\(failures)  \(ByteFormat.speed(speed))"
    }
}
