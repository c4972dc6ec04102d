import Testing

@testable import Fastpull

@Suite("SegmentTable")
struct SegmentTableTests {
    func table(_ lengths: [Int64]) -> SegmentTable {
        var start: Int64 = 0
        return SegmentTable(
            segments: lengths.map { length in
                defer { start += length }
                return Segment(start: start, end: start + length)
            })
    }

    @Test func assignsInFileOrderThenRunsOut() {
        var state = table([10, 10, 10])
        #expect(state.assignNext()?.index == 0)
        #expect(state.assignNext()?.index == 1)
        #expect(state.assignNext()?.index == 2)
        #expect(state.assignNext() == nil)
    }

    @Test func frontierFollowsTheContiguousPrefix() {
        var state = table([10, 10, 10])
        for _ in 0..<3 { _ = state.assignNext() }
        #expect(state.frontier == 0)
        #expect(state.recordWritten(index: 1, count: 10) == false)
        #expect(state.frontier == 0)
        #expect(state.recordWritten(index: 0, count: 4) == true)
        #expect(state.frontier == 4)
        state.recordWritten(index: 0, count: 6)
        #expect(state.frontier == 20)
        state.recordWritten(index: 2, count: 10)
        #expect(state.frontier == 30)
        #expect(state.isComplete)
        #expect(state.writtenBytes == 30)
    }

    @Test func givenBackSegmentResumesAtItsWrittenOffset() {
        var state = table([10, 10])
        let first = state.assignNext()
        #expect(first?.index == 0)
        state.recordWritten(index: 0, count: 3)
        state.giveBack(index: 0)
        let again = state.assignNext()
        #expect(again?.index == 0)
        #expect(again?.segment.resumeOffset == 3)
        #expect(again?.segment.remaining == 7)
    }

    @Test func completedSegmentsFromAResumeAreNotAssigned() {
        let state0 = SegmentTable(segments: [
            Segment(start: 0, end: 10, written: 10), Segment(start: 10, end: 20, written: 4),
        ])
        var state = state0
        #expect(state.frontier == 14)
        let next = state.assignNext()
        #expect(next?.index == 1)
        #expect(next?.segment.resumeOffset == 14)
        #expect(state.assignNext() == nil)
    }

    @Test func givingBackACompleteSegmentDoesNothing() {
        var state = table([10])
        _ = state.assignNext()
        state.recordWritten(index: 0, count: 10)
        state.giveBack(index: 0)
        #expect(state.assignNext() == nil)
        #expect(state.isComplete)
    }

    @Test func emptyTableIsComplete() {
        var state = table([])
        #expect(state.isComplete)
        #expect(state.frontier == 0)
        #expect(state.assignNext() == nil)
    }
}
