import FastpullFixtures
import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullNet

/// A host process whose own tasks keep Swift's and Dispatch's queues busy on purpose. The suite runs
/// on its own (scripts/test.sh): it loads the process, and what it compares are moments.
@Suite("A busy host process", .serialized)
struct BusyHostTests {
    let server: FixtureServer
    let folder = TemporaryFolder()

    init() throws {
        server = try FixtureServer()
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

    /// A host application whose own tasks keep waking from `Task.sleep` and computing (a build tool
    /// hashing as it goes) keeps Dispatch's queue for their priority busy, and a `Task.sleep` that
    /// ends waits there behind them. The connections that start a moment after the first (and the
    /// fetch loop's ticks) sleep on the download's own alarm thread instead: they start while the
    /// first still fetches its own piece, and the piece after it is theirs. (With `Task.sleep` they
    /// started later, once the first had gone on into the pieces they would have taken; in a test
    /// process of six hundred tests it once fetched the whole file alone.)
    @Test func aHostWhoseTasksKeepTheQueueBusyDoesNotHoldBackTheConnections() async throws {
        let size = 6 << 20
        var configuration = Configuration.quickRetries(connections: 4)
        configuration.diagnostics.traceFile = folder.path + "/trace.jsonl"
        let server = server
        // Until the whole file is sent, about two seconds of their work waits in the queue.
        let others = (0..<16).map { _ in
            Task {
                while server.stats.bodyBytesSent < size {
                    try await Task.sleep(for: .milliseconds(1))
                    let end = ContinuousClock.now + .milliseconds(250)
                    while ContinuousClock.now < end, server.stats.bodyBytesSent < size {}
                }
            }
        }
        defer { for task in others { task.cancel() } }
        let download = Download(
            from: server.url("/gen/\(size)?rate=4000000"), to: folder.url("out.bin"),
            configuration: configuration)
        let report = try await download.run()
        #expect(report.sha256 == Expected.sha256(size: size))
        let records = try SchedulerTests.traceRecords(folder.path + "/trace.jsonl")
        let windows = records.filter { $0["event"] as? String == "window" }
        #expect(
            windows.contains { $0["conn"] as? Int != 0 && $0["start"] as? Int == 1 << 20 },
            "\(records.filter { $0["event"] as? String != "progress" })")
    }
}
