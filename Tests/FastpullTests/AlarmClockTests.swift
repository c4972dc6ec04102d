import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullNet

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
            let before = ThreadPoolTests.threadID()
            try await AlarmClock.sleep(for: .milliseconds(1))
            return (before, ThreadPoolTests.threadID())
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
}
