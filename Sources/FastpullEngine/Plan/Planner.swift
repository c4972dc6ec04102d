/// Splits a file into segments.
///
/// Segments are handed out in file order to whichever connection is free, so the planner makes several
/// per connection: faster connections take more of them, and the contiguous prefix of finished bytes
/// (which the streaming hash follows) grows steadily instead of jumping at the end. No segment is
/// smaller than the minimum segment size, except the last one.
package enum Planner {
    /// Segments planned per connection when the file is large enough.
    static let segmentsPerConnection: Int64 = 8
    /// The largest segment planned: bounds how far the hash can trail the download.
    static let maximumSegmentSize: Int64 = 16 << 20
    /// The most segments planned, whatever size the server claims: segments grow past
    /// ``maximumSegmentSize`` rather than multiply, so a plan's memory is bounded.
    static let maximumSegmentCount: Int64 = 4096

    static func plan(size: Int64, connections: Int, minimumSegmentSize: Int64) -> Plan {
        precondition(size >= 0 && connections >= 1 && minimumSegmentSize >= 1)
        guard size > 0 else { return Plan(size: 0, segments: [], connections: 0) }
        let wanted = size / (Int64(connections) * segmentsPerConnection)
        let fewest = size / maximumSegmentCount + (size % maximumSegmentCount == 0 ? 0 : 1)
        let segmentSize = max(minimumSegmentSize, min(wanted, maximumSegmentSize), fewest)
        // A remainder smaller than the minimum joins the previous segment.
        var count = size / segmentSize
        if count == 0 { count = 1 }
        var segments: [Segment] = []
        segments.reserveCapacity(Int(count))
        var start: Int64 = 0
        for index in 0..<count {
            let end = index == count - 1 ? size : start + segmentSize
            segments.append(Segment(start: start, end: end))
            start = end
        }
        return Plan(size: size, segments: segments, connections: min(connections, segments.count))
    }
}
