import Synchronization

/// Which source each byte of the file was asked from: every window a connection requests is recorded
/// with its source as it starts, the later record winning where windows overlap (a steal or a hedge
/// hands the rest of a window to another connection, whose window starts later). A piece that does
/// not verify is blamed on the sources recorded over it.
package final class SourceMap: Sendable {
    /// A run of bytes asked from one source.
    struct Run: Sendable, Equatable {
        var range: Range<Int64>
        var source: Int
    }

    /// Sorted by offset, without overlaps.
    private let runs = Mutex<[Run]>([])

    init() {}

    /// `range` is asked from `source` now.
    func record(_ range: Range<Int64>, source: Int) {
        guard !range.isEmpty else { return }
        runs.withLock { runs in
            var kept: [Run] = []
            kept.reserveCapacity(runs.count + 2)
            for run in runs {
                if run.range.upperBound <= range.lowerBound || run.range.lowerBound >= range.upperBound {
                    kept.append(run)
                    continue
                }
                if run.range.lowerBound < range.lowerBound {
                    kept.append(Run(range: run.range.lowerBound..<range.lowerBound, source: run.source))
                }
                if run.range.upperBound > range.upperBound {
                    kept.append(Run(range: range.upperBound..<run.range.upperBound, source: run.source))
                }
            }
            let at = kept.firstIndex { $0.range.lowerBound >= range.upperBound } ?? kept.count
            kept.insert(Run(range: range, source: source), at: at)
            // Neighbours from the same source join, so a long download keeps few runs.
            var joined: [Run] = []
            joined.reserveCapacity(kept.count)
            for run in kept {
                if let last = joined.last, last.source == run.source,
                    last.range.upperBound == run.range.lowerBound
                {
                    joined[joined.count - 1].range = last.range.lowerBound..<run.range.upperBound
                } else {
                    joined.append(run)
                }
            }
            runs = joined
        }
    }

    /// The sources recorded anywhere in `range` (empty for bytes kept from an earlier run).
    func sources(in range: Range<Int64>) -> Set<Int> {
        runs.withLock { runs in
            Set(runs.filter { $0.range.overlaps(range) }.map(\.source))
        }
    }

    /// The runs that lie in `range`, cut to it, in order.
    func runs(in range: Range<Int64>) -> [Run] {
        runs.withLock { runs in
            runs.compactMap { run in
                let lower = max(run.range.lowerBound, range.lowerBound)
                let upper = min(run.range.upperBound, range.upperBound)
                return lower < upper ? Run(range: lower..<upper, source: run.source) : nil
            }
        }
    }

    /// Every run, in order (for tests).
    var all: [Run] { runs.withLock { $0 } }
}
