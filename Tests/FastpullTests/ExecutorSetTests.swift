import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullNet

/// A download in a batch lane runs its control work on the lane's thread, which outlives it.
@Suite("ExecutorSet")
struct ExecutorSetTests {
    /// The kernel's id of the thread that runs a job preferring `executor`.
    static func thread(of executor: ThreadExecutor) async -> String {
        await withTaskExecutorPreference(executor) { ThreadPoolTests.threadID() }
    }

    @Test func aDownloadInALaneControlsFromTheLanesThreadAndLeavesItRunning() async {
        let lane = ThreadExecutor(name: "test-lane")
        defer { lane.shutdown() }
        let before = await Self.thread(of: lane)
        for _ in 0..<3 {
            let executors = ExecutorSet.$laneThread.withValue(lane) { ExecutorSet() }
            #expect(executors.control === lane)
            #expect(await Self.thread(of: executors.control) == before)
            executors.retire(-1)
            executors.shutdown()
        }
        // Still the same thread for the lane's next file: neither shutdown ended it.
        #expect(await Self.thread(of: lane) == before)
        // Outside a lane a download starts a control thread of its own, and ends it.
        let own = ExecutorSet()
        #expect(own.control !== lane)
        own.shutdown()
    }
}
