import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullNet

@Suite("PlainMutex")
struct PlainMutexTests {
    /// Threads that add to one count under the lock lose no addition, and what a critical section
    /// returns comes back out.
    @Test func threadsAddingUnderTheLockLoseNothing() {
        let counter = PlainMutex((count: 0, entered: 0))
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 {
                counter.withLock { state in
                    state.entered += 1
                    let seen = state.count
                    state.count = seen + 1
                }
            }
        }
        #expect(counter.withLock { $0.count } == 80_000)
        #expect(counter.withLock { $0.entered } == 80_000)
        struct Refused: Error {}
        #expect(throws: Refused.self) { try counter.withLock { _ throws(Refused) in throw Refused() } }
    }
}
