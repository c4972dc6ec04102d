import Testing

@testable import Fastpull
@testable import FastpullEngine

@Suite("ProgressMetronome: one clock for every download's progress events")
struct ProgressMetronomeTests {
    @Test(.timeLimit(.minutes(1))) func everyRegisteredDownloadIsToldAtEachBeat() async {
        let metronome = ProgressMetronome(interval: .milliseconds(20))
        let (first, firstSink) = AsyncStream.makeStream(of: Int.self)
        let (second, secondSink) = AsyncStream.makeStream(of: Int.self)
        let a = metronome.register { firstSink.yield(1) }
        let b = metronome.register { secondSink.yield(2) }
        #expect(metronome.count == 2)
        var beatsOfA = first.makeAsyncIterator()
        var beatsOfB = second.makeAsyncIterator()
        #expect(await beatsOfA.next() == 1)
        #expect(await beatsOfB.next() == 2)
        #expect(await beatsOfA.next() == 1)
        metronome.unregister(a)
        metronome.unregister(b)
        #expect(metronome.count == 0)
        // Once nobody is registered its task ends; a registration after that starts it again.
        let (third, thirdSink) = AsyncStream.makeStream(of: Int.self)
        let c = metronome.register { thirdSink.yield(3) }
        var beatsOfC = third.makeAsyncIterator()
        #expect(await beatsOfC.next() == 3)
        metronome.unregister(c)
    }

    /// Downloads that look at their speed every 100 ms share one clock, as their progress reports
    /// share the one of a second.
    @Test func everyIntervalHasOneSharedMetronome() {
        #expect(ProgressMetronome.shared(every: Download.progressInterval) === ProgressMetronome.shared)
        let tenth = ProgressMetronome.shared(every: .milliseconds(100))
        #expect(tenth.interval == .milliseconds(100))
        #expect(ProgressMetronome.shared(every: .milliseconds(100)) === tenth)
        #expect(ProgressMetronome.shared(every: .milliseconds(200)) !== tenth)
    }

    @Test func theFirstReportComesAfterHalfAnIntervalWithASpeed() throws {
        let start = ContinuousClock.now
        let beat = ProgressBeat(started: start, interval: .seconds(1))
        #expect(beat.speed(bytes: 1000, now: start + .milliseconds(400)) == nil)
        let speed = try #require(beat.speed(bytes: 1_000_000, now: start + .milliseconds(600)))
        #expect(speed > 1_000_000 && speed < 2_000_000)
    }
}
