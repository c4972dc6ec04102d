import Fastpull
import Foundation

/// The live progress line on a terminal: percent, bytes, speed, ETA and connections, redrawn at most
/// ten times a second on stderr and erased before the summary.
struct ProgressView {
    let download: Download
    let width: Int

    /// Redraws until cancelled.
    func run() async {
        var speed = SpeedMeter()
        while !Task.isCancelled {
            let progress = download.progress
            speed.add(bytes: progress.bytesWritten, at: ContinuousClock.now)
            let line = Self.render(progress, bytesPerSecond: speed.bytesPerSecond, width: width)
            FileHandle.standardError.write(Data(("\r" + line + "\u{1B}[K").utf8))
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Erases the line.
    static func clear() {
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }

    static func render(_ progress: TransferProgress, bytesPerSecond: Double, width: Int) -> String {
        var parts: [String] = []
        if let fraction = progress.fraction { parts.append(String(format: "%3.0f%%", fraction * 100)) }
        var bytes = ByteFormat.size(progress.bytesWritten)
        if let total = progress.totalBytes { bytes += " / " + ByteFormat.size(total) }
        parts.append(bytes)
        parts.append(ByteFormat.speed(bytesPerSecond))
        if let total = progress.totalBytes, bytesPerSecond > 0 {
            parts.append("ETA " + ByteFormat.duration(Double(total - progress.bytesWritten) / bytesPerSecond))
        }
        parts.append("\(progress.activeConnections) conn")
        let line = parts.joined(separator: "  ")
        return String(line.prefix(max(width - 1, 10)))
    }
}

/// Speed over the last few seconds, from samples of a growing byte count.
struct SpeedMeter {
    private var samples: [(bytes: Int64, time: ContinuousClock.Instant)] = []
    var window: Duration = .seconds(3)

    mutating func add(bytes: Int64, at time: ContinuousClock.Instant) {
        samples.append((bytes, time))
        while let first = samples.first, time - first.time > window { samples.removeFirst() }
    }

    var bytesPerSecond: Double {
        guard let first = samples.first, let last = samples.last, last.time > first.time else { return 0 }
        let elapsed = last.time - first.time
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Double(last.bytes - first.bytes) / seconds
    }
}
