/// The scheduler's state, as a pure value: which segments are waiting, in flight or done, and the
/// contiguous prefix of the file that is complete. Events go in, decisions come out; no I/O.
struct SegmentTable: Sendable, Equatable {
    enum State: Sendable, Equatable {
        case waiting
        case inFlight
        case done
    }

    /// A segment handed to a connection.
    struct Assignment: Sendable, Equatable {
        var index: Int
        var segment: Segment
    }

    private(set) var segments: [Segment]
    private(set) var states: [State]
    /// Segments are assigned in file order; everything before this index has been assigned once.
    private var nextWaiting = 0
    /// Indices of segments given back after a failure, assigned before new ones.
    private var returned: [Int] = []
    /// The first segment that is not complete.
    private var firstIncomplete = 0

    init(segments: [Segment]) {
        self.segments = segments
        self.states = segments.map { $0.isComplete ? .done : .waiting }
        advanceFrontier()
        skipCompleted()
    }

    /// Bytes written across all segments.
    var writtenBytes: Int64 { segments.reduce(0) { $0 + $1.written } }

    /// Whether every segment is complete.
    var isComplete: Bool { firstIncomplete == segments.count }

    /// The end of the contiguous complete prefix: every byte before it is in the file.
    var frontier: Int64 {
        guard firstIncomplete < segments.count else { return segments.last?.end ?? 0 }
        return segments[firstIncomplete].resumeOffset
    }

    /// The next segment for an idle connection, or nil when nothing is waiting.
    mutating func assignNext() -> Assignment? {
        let index: Int
        if let given = returned.popLast() {
            index = given
        } else {
            skipCompleted()
            guard nextWaiting < segments.count else { return nil }
            index = nextWaiting
            nextWaiting += 1
        }
        states[index] = .inFlight
        return Assignment(index: index, segment: segments[index])
    }

    /// Records `count` more bytes written at the segment's resume offset. Returns true when the
    /// frontier moved.
    @discardableResult
    mutating func recordWritten(index: Int, count: Int64) -> Bool {
        precondition(count >= 0 && segments[index].written + count <= segments[index].length)
        segments[index].written += count
        if segments[index].isComplete { states[index] = .done }
        guard index == firstIncomplete else { return false }
        advanceFrontier()
        return true
    }

    /// Gives an unfinished in-flight segment back (its connection failed for good); another
    /// connection resumes it at its written offset.
    mutating func giveBack(index: Int) {
        guard states[index] == .inFlight, !segments[index].isComplete else { return }
        states[index] = .waiting
        returned.append(index)
    }

    private mutating func advanceFrontier() {
        while firstIncomplete < segments.count, segments[firstIncomplete].isComplete {
            firstIncomplete += 1
        }
    }

    private mutating func skipCompleted() {
        while nextWaiting < segments.count, states[nextWaiting] == .done { nextWaiting += 1 }
    }
}
