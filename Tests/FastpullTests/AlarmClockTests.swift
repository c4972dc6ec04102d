import Foundation
import Testing

@testable import Fastpull

/// Sleeps that wake on a thread of their own, whatever the process's other tasks keep busy.
@Suite("AlarmClock")
struct AlarmClockTests {
    @Test func aSleepLastsAtLeastItsDuration() async throws {
        let start = ContinuousClock.now
        try await AlarmClock.sleep(for: .milliseconds(20))
        #expect(ContinuousClock.now - start >= .milliseconds(20))
    }

    /// Sleepers on one thread wake in the order of their deadlines, not of their calls.
    @Test func sleepersWakeInTheOrderOfTheirDeadlines() async throws {
        let executor = ThreadExecutor(name: "test-alarm")
        defer { executor.shutdown() }
        let woken = PlainMutex<[Int]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for milliseconds in [30, 10, 20, 0] {
                group.addTask(executorPreference: executor) {
                    try await AlarmClock.sleep(for: .milliseconds(milliseconds))
                    woken.withLock { $0.append(milliseconds) }
                }
            }
            try await group.waitForAll()
        }
        #expect(woken.withLock { $0 } == [0, 10, 20, 30])
    }

    /// The sleeper goes on on the executor it slept on (a connection's thread), not somewhere else.
    @Test func aSleeperGoesOnOnItsOwnExecutor() async throws {
        let executor = ThreadExecutor(name: "test-alarm")
        defer { executor.shutdown() }
        let (before, after) = try await withTaskExecutorPreference(executor) {
            let before = ParkedThreadsTests.threadID()
            try await AlarmClock.sleep(for: .milliseconds(1))
            return (before, ParkedThreadsTests.threadID())
        }
        #expect(before == after)
    }

    @Test(.timeLimit(.minutes(1))) func cancellingASleepEndsItWithCancellationError() async throws {
        let sleeper = Task { try await AlarmClock.sleep(for: .seconds(3600)) }
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        // A task cancelled before it sleeps does not sleep at all.
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await AlarmClock.sleep(for: .seconds(3600))
        }
        await #expect(throws: CancellationError.self) { try await cancelled.value }
    }

    /// Tasks that wake from `Task.sleep` and then compute keep Dispatch's queue for their priority
    /// busy, and a `Task.sleep` that ends meanwhile waits behind all of them (in a test process of six
    /// hundred tests, a millisecond's sleep took 1.3 seconds; here a `Task.sleep` in its place went
    /// on after 24 to 58 of the hundred). An alarm sleep started after them all goes on before a
    /// tenth of them have had their turn.
    @Test func aSleepWakesWhileOtherWokenTasksKeepTheQueueBusy() async throws {
        let executor = ThreadExecutor(name: "test-alarm")
        defer { executor.shutdown() }
        let others = 100
        let ran = PlainMutex(0)
        let seen = try await withThrowingTaskGroup(of: Int?.self) { group in
            for _ in 0..<others {
                group.addTask {
                    try await Task.sleep(for: .milliseconds(1))
                    let end = ContinuousClock.now + .milliseconds(10)
                    while ContinuousClock.now < end {}
                    ran.withLock { $0 += 1 }
                    return nil
                }
            }
            group.addTask(executorPreference: executor) {
                try await AlarmClock.sleep(for: .milliseconds(1))
                return ran.withLock { $0 }
            }
            var seen: Int?
            for try await value in group where value != nil { seen = value }
            return seen
        }
        let count = try #require(seen)
        #expect(count < others / 10, "\(count) of \(others) woken tasks had their turn first")
    }
}
