import FoundationEssentials
import Synchronization

/// Threads kept for a while after their work ended, so that the next piece of work starts on one of
/// them instead of a new thread: a batch of small files otherwise starts and ends several threads per
/// file (each `clone`, stack `mmap` and `munmap`, name and signal mask), which cost more CPU than
/// fetching the file.
///
/// A parked thread waits ``idleTime`` for new work, then ends; at most ``limit`` wait at once.
enum ParkedThreads {
    static let idleTime: TimeInterval = 2
    static let limit = 32

    /// Runs `work` on a parked thread, or on a new one when none waits.
    static func run(_ work: @escaping @Sendable () -> Void) {
        if let slot = parked.withLock({ $0.popLast() }) {
            slot.hand(work)
            return
        }
        OSThread.detach {
            let slot = Slot()
            var next: (@Sendable () -> Void)? = work
            while let work = next {
                work()
                next = park(slot)
            }
        }
    }

    /// One parked thread's mailbox. `@unchecked Sendable`: `work` is read and written only while
    /// `condition` is locked.
    private final class Slot: @unchecked Sendable {
        let condition = Condition()
        var work: (@Sendable () -> Void)?

        func hand(_ work: @escaping @Sendable () -> Void) {
            condition.lock()
            self.work = work
            condition.signal()
            condition.unlock()
        }
    }

    private static let parked = Mutex<[Slot]>([])

    /// How many threads wait for work now.
    static var parkedCount: Int { parked.withLock { $0.count } }

    /// Waits on `slot` for new work; nil when none came in time (the thread then ends).
    private static func park(_ slot: Slot) -> (@Sendable () -> Void)? {
        let admitted = parked.withLock { parked in
            guard parked.count < limit else { return false }
            parked.append(slot)
            return true
        }
        guard admitted else { return nil }
        let deadline = ContinuousClock.now + .seconds(idleTime)
        slot.condition.lock()
        defer { slot.condition.unlock() }
        while slot.work == nil {
            if !slot.condition.wait(until: deadline) {
                // Time is up; unless a taker has just popped this slot (its work is then on the way),
                // leave the list and end.
                let left = parked.withLock { parked in
                    guard let index = parked.firstIndex(where: { $0 === slot }) else { return false }
                    parked.remove(at: index)
                    return true
                }
                if left { return nil }
                while slot.work == nil { slot.condition.wait() }
            }
        }
        defer { slot.work = nil }
        return slot.work
    }
}
