/// How a file of known size is split: the segments, in file order, and how many connections fetch them.
package struct Plan: Sendable, Equatable {
    var size: Int64
    var segments: [Segment]
    /// Connections to open: never more than there are segments.
    var connections: Int
}
