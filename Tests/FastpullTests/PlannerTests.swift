import Testing

@testable import Fastpull
@testable import FastpullEngine

@Suite("Planner")
struct PlannerTests {
    let mebibyte: Int64 = 1 << 20

    /// The invariants every plan keeps: segments tile [0, size) in order, none empty, none below the
    /// minimum except a file smaller than the minimum, and no more connections than segments.
    func checkInvariants(_ plan: Plan, size: Int64, connections: Int, minimum: Int64) {
        var expectedStart: Int64 = 0
        for segment in plan.segments {
            #expect(segment.start == expectedStart)
            #expect(segment.end > segment.start)
            #expect(segment.written == 0)
            if size >= minimum { #expect(segment.length >= minimum) }
            expectedStart = segment.end
        }
        #expect(expectedStart == size)
        #expect(plan.connections <= connections)
        #expect(plan.connections <= plan.segments.count)
        #expect(plan.size == size)
    }

    @Test func emptyFileHasNoSegments() {
        let plan = Planner.plan(size: 0, connections: 8, minimumSegmentSize: mebibyte)
        #expect(plan.segments.isEmpty)
        #expect(plan.connections == 0)
    }

    @Test func oneByteIsOneSegment() {
        let plan = Planner.plan(size: 1, connections: 8, minimumSegmentSize: mebibyte)
        #expect(plan.segments == [Segment(start: 0, end: 1)])
        #expect(plan.connections == 1)
    }

    @Test func smallFileIsOneSegment() {
        let plan = Planner.plan(size: 100 * 1024, connections: 8, minimumSegmentSize: mebibyte)
        #expect(plan.segments.count == 1)
        #expect(plan.connections == 1)
    }

    @Test(arguments: [-1, 0, 1] as [Int64])
    func aroundTheMinimum(delta: Int64) {
        let size = mebibyte + delta
        let plan = Planner.plan(size: size, connections: 8, minimumSegmentSize: mebibyte)
        #expect(plan.segments.count == 1)
        checkInvariants(plan, size: size, connections: 8, minimum: mebibyte)
    }

    @Test func twiceTheMinimumSplitsInTwo() {
        let plan = Planner.plan(size: 2 * mebibyte, connections: 8, minimumSegmentSize: mebibyte)
        #expect(plan.segments.count == 2)
        #expect(plan.connections == 2)
        let justUnder = Planner.plan(size: 2 * mebibyte - 1, connections: 8, minimumSegmentSize: mebibyte)
        #expect(justUnder.segments.count == 1)
    }

    @Test(arguments: [1, 2, 3, 7, 8, 16, 128])
    func nonDivisibleSizes(connections: Int) {
        for size in [mebibyte * 10 + 7, mebibyte * 64 + 1, 999_999_937] as [Int64] {
            let plan = Planner.plan(size: size, connections: connections, minimumSegmentSize: mebibyte)
            checkInvariants(plan, size: size, connections: connections, minimum: mebibyte)
            #expect(plan.connections == min(connections, plan.segments.count))
        }
    }

    @Test func segmentsNeverExceedTheMaximum() {
        let plan = Planner.plan(size: 1 << 30, connections: 8, minimumSegmentSize: mebibyte)
        #expect(plan.segments.allSatisfy { $0.length <= Planner.maximumSegmentSize })
        #expect(plan.connections == 8)
        checkInvariants(plan, size: 1 << 30, connections: 8, minimum: mebibyte)
    }

    @Test func hugeFile() {
        let size: Int64 = 5 << 40  // 5 TiB
        let plan = Planner.plan(size: size, connections: 16, minimumSegmentSize: mebibyte)
        #expect(plan.segments.count <= Int(Planner.maximumSegmentCount))
        checkInvariants(plan, size: size, connections: 16, minimum: mebibyte)
    }

    /// Whatever size a server claims, the plan stays small: 2^62 bytes is 4,096 segments, not 2^38.
    @Test(arguments: [Int64(1) << 50, Int64(1) << 62, Int64.max])
    func absurdSizesPlanABoundedNumberOfSegments(size: Int64) {
        let plan = Planner.plan(size: size, connections: 16, minimumSegmentSize: mebibyte)
        #expect(plan.segments.count <= Int(Planner.maximumSegmentCount))
        #expect(plan.segments.first?.start == 0 && plan.segments.last?.end == size)
    }

    @Test func minimumLargerThanTheFile() {
        let plan = Planner.plan(size: 10, connections: 4, minimumSegmentSize: 100)
        #expect(plan.segments == [Segment(start: 0, end: 10)])
    }
}
