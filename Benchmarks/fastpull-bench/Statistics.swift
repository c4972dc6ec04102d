/// Order statistics of a handful of samples (these machines are noisy: medians, not means).
struct Statistics: Sendable, Codable, Equatable {
    var median: Double
    var minimum: Double
    var maximum: Double
    var count: Int

    /// `(max − min) ÷ median`, in percent: how far apart the runs were.
    var spreadPercent: Double { median > 0 ? (maximum - minimum) / median * 100 : 0 }

    /// Statistics of `values`, or nil when there are none.
    init?(_ values: [Double]) {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        minimum = sorted[0]
        maximum = sorted[sorted.count - 1]
        count = sorted.count
    }
}

extension Array where Element == Double {
    /// The median, or nil for an empty array.
    var median: Double? { Statistics(self)?.median }
}
