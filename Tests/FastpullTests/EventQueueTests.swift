import Testing

@testable import Fastpull
@testable import FastpullEngine

/// The one buffering policy of event sequences: nothing dropped but progress, an unread progress
/// event replaced by a newer one of the same download.
@Suite("EventQueue")
struct EventQueueTests {
    /// Everything left in `queue` once it is finished.
    private func drain(_ queue: EventQueue<String>) async -> [String] {
        queue.finish()
        var read: [String] = []
        for await element in queue.stream { read.append(element) }
        return read
    }

    @Test func aNewerProgressReplacesAnUnreadOneOfTheSameDownloadAtTheEnd() async {
        let queue = EventQueue<String>()
        queue.yield("progress 0 a", progressOf: 0)
        queue.yield("warning")
        queue.yield("progress 1 a", progressOf: 1)
        queue.yield("progress 0 b", progressOf: 0)
        queue.yield("finished 1")
        #expect(await drain(queue) == ["warning", "progress 1 a", "progress 0 b", "finished 1"])
    }

    @Test func aProgressAlreadyReadIsNotReplacedAndNothingElseIsDropped() async {
        let queue = EventQueue<String>()
        queue.yield("progress a", progressOf: 0)
        #expect(await queue.next() == "progress a")
        queue.yield("progress b", progressOf: 0)
        for retry in 0..<1000 { queue.yield("retry \(retry)") }
        let read = await drain(queue)
        #expect(read.count == 1001 && read.first == "progress b" && read.last == "retry 999")
    }

    /// A consumer waiting for the next element gets it when it comes, and nil at the end.
    @Test func aWaitingConsumerIsWokenAndSeesTheEnd() async {
        let queue = EventQueue<String>()
        let reader = Task {
            var read: [String] = []
            for await element in queue.stream { read.append(element) }
            return read
        }
        queue.yield("one")
        queue.yield("two", progressOf: 0)
        queue.finish()
        queue.yield("after the end")
        #expect(await reader.value == ["one", "two"])
    }
}

extension EventQueueTests {
    /// A consumer whose task is cancelled while it waits stops waiting: its sequence ends.
    @Test func aCancelledConsumerStopsWaiting() async {
        let queue = EventQueue<String>()
        queue.yield("one")
        let reader = Task {
            var read: [String] = []
            for await element in queue.stream { read.append(element) }
            return read
        }
        while queue.isWaited == false { await Task.yield() }
        reader.cancel()
        #expect(await reader.value == ["one"])
    }
}
