import FastpullFixtures
import FastpullNet
import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine

/// A ``FastpullClient`` owns what its downloads share: connections kept alive across files and
/// downloads, one per-host count, threads kept for the next piece of work; and it shuts down.
@Suite("FastpullClient")
struct ClientTests {
    let server: FixtureServer
    let folder = TemporaryFolder()

    init() throws {
        server = try FixtureServer()
    }

    /// A build tool holding one client across 100 small files (a batch, four at a time) and then
    /// larger ones (two downloads at once, each wanting four connections): the server never sees
    /// more connections open than the per-host limit, the small files after the first few come on
    /// kept-alive connections, and the threads started stay within what runs at once, however many
    /// files there are. `shutdown()` leaves no connection open and no thread alive.
    @Test func aClientAcrossManyDownloadsStaysWithinThePerHostLimit() async throws {
        // Parked threads wait a minute here, not the product's two seconds: on a loaded machine a
        // pause between downloads longer than that ended them, and their successors counted as
        // threads over the bound (20 against 14) though no more ran at once.
        let client = FastpullClient(threads: ThreadPool(idleTime: 60))
        let perHost = 4
        var configuration = Configuration.quickRetries(connections: 4)
        configuration.connections.maximumPerHost = perHost

        let small = (0..<100).map { index in
            BatchItem(
                url: server.url("/gen/\(20_000 + index)?seed=\(index)"),
                destination: folder.url("small-\(index).bin"))
        }
        let outcomes = await client.download(
            small, configuration: configuration, options: BatchOptions(parallelFiles: 4, keepsEvents: false))
        for (index, outcome) in outcomes.enumerated() {
            #expect(
                outcome.report?.sha256 == Expected.sha256(size: 20_000 + index, seed: UInt64(index)),
                "\(index): \(String(describing: outcome.error))")
        }
        #expect(server.peakOpenConnections <= perHost)
        #expect(server.stats.connections <= perHost, "\(server.stats)")
        // Kept alive for the next download, until the client shuts down: idle, none still leased,
        // and no connection ever had two holders (the caches' state machines refused no event).
        #expect(server.openConnections > 0)
        #expect(client.caches.map(\.leasedCount) == [0])
        #expect(client.caches.map(\.idleCount).reduce(0, +) > 0)
        #expect(
            client.caches.flatMap(\.impossibleEvents).isEmpty, "\(client.caches.flatMap(\.impossibleEvents))")
        // Threads: a control thread for each of the four lanes runs its files one after another,
        // and a file's connection, hashing and journal threads are parked ones, not new.
        let smallThreads = client.threads.startedCount
        #expect(smallThreads <= 4 + perHost, "threads started: \(smallThreads)")

        let large = 6 << 20
        let settings = configuration
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<6 {
                let url = server.url("/gen/\(large)?seed=\(100 + index)")
                let file = folder.url("large-\(index).bin")
                group.addTask {
                    let report = try await client.download(from: url, to: file, configuration: settings)
                    #expect(report.sha256 == Expected.sha256(size: large, seed: UInt64(100 + index)))
                }
                if index % 2 == 1 { try await group.next() }
            }
            try await group.waitForAll()
        }
        let host = "127.0.0.1:\(server.port)"
        #expect(client.census.peak(host) <= perHost, "server's peak: \(server.peakOpenConnections)")
        // Two at once, each with at most a control, a hashing and a journal thread and one for each
        // of its connections.
        let largeThreads = client.threads.startedCount - smallThreads
        #expect(largeThreads <= 2 * (3 + perHost), "threads started: \(largeThreads)")

        #expect(
            client.caches.flatMap(\.impossibleEvents).isEmpty, "\(client.caches.flatMap(\.impossibleEvents))")

        await client.shutdown()
        #expect(client.threads.liveCount == 0)
        #expect(client.caches.map(\.openCount) == [0])
        #expect(try await eventually { server.openConnections == 0 }, "open: \(server.openConnections)")
    }

    /// Shutting down stops a download under way: it ends `interrupted` with its progress saved, and
    /// the same download through another client resumes it to the right bytes. A download asked of
    /// the client afterwards fails at once with a usage error, and touches nothing.
    /// A client's overall limit holds for its downloads together: two at once of 1 MiB each under
    /// 1,000,000 bytes per second cannot end sooner than 2 MiB at that rate (a lower bound, which the
    /// limiter makes certain; how much later is the machine's business and not checked).
    @Test func anOverallLimitHoldsForEveryDownloadTogether() async throws {
        let client = FastpullClient()
        client.maximumBytesPerSecond = 1_000_000
        #expect(client.maximumBytesPerSecond == 1_000_000)
        let started = ContinuousClock.now
        async let first = client.download(
            from: server.url("/gen/\(1 << 20)?seed=201"), to: folder.url("a.bin"))
        async let second = client.download(
            from: server.url("/gen/\(1 << 20)?seed=202"), to: folder.url("b.bin"))
        let reports = try await [first, second]
        let took = ContinuousClock.now - started
        #expect(reports.allSatisfy { $0.size == 1 << 20 })
        // 2 MiB at 1 MB/s is 2.097 s; the limiter lets each booking run ahead by its tolerance only.
        #expect(took >= .milliseconds(2_097 - 80), "\(took)")
        client.maximumBytesPerSecond = nil
        #expect(client.maximumBytesPerSecond == nil)
        await client.shutdown()
    }

    @Test func shutdownStopsWhatRunsAndRefusesWhatComesAfter() async throws {
        let client = FastpullClient()
        let size = 8 << 20
        let url = server.url("/gen/\(size)?seed=7&rate=\(2 << 20)")
        let file = folder.url("slow.bin")
        let download = Download(
            from: url, to: file, configuration: .quickRetries(connections: 2), client: client)
        let running = Task { try await download.run() }
        #expect(try await eventually { download.progress.bytesWritten > 0 })

        await client.shutdown()
        await #expect {
            _ = try await running.value
        } throws: { error in
            (error as? FastpullError)?.code == .interrupted
        }
        #expect(client.threads.liveCount == 0)
        #expect(try await eventually { server.openConnections == 0 }, "open: \(server.openConnections)")
        #expect(FileManager.default.fileExists(atPath: file.path + ".part"))

        let late = folder.url("late.bin")
        await #expect {
            _ = try await client.download(from: server.url("/gen/100"), to: late)
        } throws: { error in
            let error = error as? FastpullError
            return error?.code == .usage && error?.message.contains("shut down") == true
        }
        #expect(!FileManager.default.fileExists(atPath: late.path))

        let other = FastpullClient()
        let report = try await other.download(
            from: url, to: file, configuration: .quickRetries(connections: 2))
        #expect(report.sha256 == Expected.sha256(size: size, seed: 7))
        #expect(report.resumedBytes > 0)
        await other.shutdown()
    }
}
