import FastpullFixtures
import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine

/// Connections that receive straight into a shared mapping of the file (``WritePath``, taken on
/// machines with more cores than this one, so forced here), against the servers that test the other
/// paths: answers cut, stalled, slowed so that their ends are taken over, served over TLS, or ended
/// by a stop and resumed. Every byte lands only inside a window its connection claimed: the file is
/// right, or the download fails.
@Suite("Receiving into a mapping of the file")
struct MappedWritePathTests {
    let server: FixtureServer
    let folder = TemporaryFolder()
    var output: URL { folder.url("out.bin") }

    init() throws {
        server = try FixtureServer()
    }

    func configuration(connections: Int = 4, _ path: WritePath.Forced = .mapped) -> Configuration {
        var configuration = Configuration.quickRetries(connections: connections)
        configuration.connections.minimumSegmentSize = 256 << 10
        configuration.writePath = path
        return configuration
    }

    /// Faults in the query of a `/gen` file of 6 MiB, each answer cut, stalled, or one connection in
    /// three slow enough that the others take over its window's end.
    @Test(arguments: [
        "", "drop-after=300000&drops=6", "stall-after=200000&stalls=2", "slow-every=3&slow-rate=300000",
        "largest-answer=700000", "whole-from=3000000",
    ])
    func theFileIsRightWhateverTheServerDoes(_ fault: String) async throws {
        let size = 6 << 20
        var configuration = configuration()
        configuration.timeouts.stall = .milliseconds(400)
        let report = try await FaultRun.download(
            server.url("/gen/\(size)?seed=5&\(fault)"), to: output, configuration
        ).get()
        #expect(report.sha256 == Expected.sha256(size: size, seed: 5), "\(fault)")
        #expect(try Expected.sha256(ofFile: output) == Expected.sha256(size: size, seed: 5), "\(fault)")
    }

    /// TLS decrypts into the mapping (the trace says which path each answer's body took).
    @Test func overTLS() async throws {
        var settings = FixtureServer.Configuration()
        settings.tls = true
        let server = try FixtureServer(settings)
        let size = 5 << 20
        var configuration = configuration()
        configuration.tls.caFile = FixturePaths.certificatesDirectory + "/ca.pem"
        configuration.diagnostics.traceFile = folder.path + "/trace.jsonl"
        let report = try await FaultRun.download(
            server.url("/gen/\(size)?seed=6&drop-after=900000&drops=3"), to: output, configuration
        ).get()
        #expect(report.sha256 == Expected.sha256(size: size, seed: 6))
        // Bytes went straight into the mapping. How many depends on the machine's load: what TLS has
        // decrypted into the connection's buffer already (an answer's first 256 KiB, and more while
        // the process waits for a core) goes through memory and `pwrite`.
        let mapped = try SchedulerTests.traceRecords(folder.path + "/trace.jsonl")
            .filter { $0["event"] as? String == "body" }.compactMap { $0["mapped"] as? Int }.reduce(0, +)
        #expect(mapped > 0, "\(mapped) of \(size) bytes received into the mapping")
    }

    /// A download stopped midway keeps what its connections received into the mapping, and the next
    /// run (on the other path) resumes from its journal to the right bytes.
    @Test func whatWasReceivedResumes() async throws {
        let size = 16 << 20
        // Four connections at 1 MB/s: about four seconds, so the pause comes while it runs even when a
        // test process running hundreds of tests at once delays this test's look by seconds (at
        // 4 MB/s each, the file was complete by then).
        let url = server.url("/gen/\(size)?seed=7&rate=1000000")
        let run = FaultRun(Download(from: url, to: output, configuration: configuration()))
        #expect(try await eventually { run.download.progress.bytesWritten > 2 << 20 })
        run.download.pause()
        _ = await run.result()
        let resumed = try await FaultRun.download(url, to: output, configuration(.splice)).get()
        #expect(resumed.resumedBytes > 0)
        #expect(resumed.sha256 == Expected.sha256(size: size, seed: 7))
    }

    /// A file that cannot be mapped whole (shorter than the plan) is not mapped.
    @Test func aFileShorterThanThePlanIsNotMapped() throws {
        let file = try OutputFile(creatingAt: folder.path + "/short.part")
        try file.truncate(to: 1000)
        #expect(file.mapForWriting(size: 4096) == nil)
        #expect(file.mapForWriting(size: 1000) != nil)
        #expect(WritePath(file: file, size: 1000, cores: 2, forced: nil).mapping == nil)
        #expect(WritePath(file: file, size: 1000, cores: 16, forced: nil).mapping != nil)
        #expect(WritePath(file: file, size: 1000, cores: 16, forced: .splice).mapping == nil)
    }
}
