import Testing

@testable import Fastpull
@testable import FastpullEngine

@Suite("SpeedMeter")
struct SpeedMeterTests {
    let t0 = ContinuousClock.now

    /// A sample that comes late (a busy machine) still gives a speed: the window keeps the one before.
    /// Before: the only other sample fell out of the 3 s window and the speed read 0.
    @Test func aLateSampleStillHasASpeed() {
        var meter = SpeedMeter()
        meter.add(bytes: 0, at: t0)
        meter.add(bytes: 5000, at: t0 + .seconds(5))
        #expect(meter.bytesPerSecond == 1000)
    }

    /// Within the window, the speed is over the window only.
    @Test func theSpeedIsOverTheLastSeconds() {
        var meter = SpeedMeter()
        for second in 0...6 {
            meter.add(bytes: Int64(second < 3 ? 0 : (second - 2) * 100), at: t0 + .seconds(second))
        }
        #expect(meter.bytesPerSecond == 100)
    }
}
