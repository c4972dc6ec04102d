import Foundation
import Glibc
import Synchronization
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullNet

/// Threads are kept for the next piece of work instead of ending with each.
@Suite("ThreadPool")
struct ThreadPoolTests {
    /// The kernel's id of the calling thread (`/proc/thread-self` links to `PID/task/TID`): unlike a
    /// `pthread_t`, not handed to a new thread soon after one ends.
    static func threadID() -> String {
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) {
                readlink("/proc/thread-self", $0.baseAddress!, $0.count)
            }
        }
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : "unknown"
    }

    /// Work that comes after other work has finished runs on the thread that did it (other tests may
    /// take a parked thread meanwhile, so of twenty hand-offs at least one must reuse).
    @Test func workAfterWorkRunsOnAKeptThread() async throws {
        var reused = 0
        for _ in 0..<20 {
            let first = await Self.threadRunning()
            let deadline = ContinuousClock.now + .seconds(5)
            while ThreadPool.standard.parkedCount == 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(1))
            }
            let second = await Self.threadRunning()
            if first == second { reused += 1 }
        }
        #expect(reused >= 1)
    }

    /// Executors one after another share their thread, each with its own queue: every job runs.
    @Test func executorsOneAfterAnotherRunEveryJob() async throws {
        for round in 0..<10 {
            let executor = ThreadExecutor(name: "parked-\(round)")
            let value = await withTaskExecutorPreference(executor) { round * 2 }
            #expect(value == round * 2)
            executor.shutdown()
            executor.waitUntilFinished()
        }
    }

    /// The id of the thread a piece of work handed to ``ThreadPool/standard`` ran on.
    private static func threadRunning() async -> String {
        await withCheckedContinuation { continuation in
            ThreadPool.standard.run { continuation.resume(returning: threadID()) }
        }
    }
}
