import FastpullFixtures
import Foundation
import Testing

@testable import Fastpull

/// A batch names a file from the server's answer: the probe that names it is the file's first GET,
/// whose answer its download reads, unless the file may be there already.
@Suite("A batch's naming probe")
struct NamingProbeTests {
    let server: FixtureServer
    let folder = TemporaryFolder()

    init() throws {
        server = try FixtureServer()
    }

    func name(_ path: String, _ configuration: Configuration = .init()) async throws -> Download.Probed {
        let cache = ConnectionCache(
            tlsOptions: TLSOptions(caFile: configuration.caFile, insecure: configuration.insecure),
            timeouts: Timeouts(connect: configuration.connectTimeout, idle: configuration.idleTimeout))
        return try await Batch.name(
            server.url(path), in: URL(filePath: folder.path), configuration: configuration, connections: cache
        ).1
    }

    /// A file not there yet is named by its GET, kept for the download; one whose file or `.part` is
    /// there (a rerun, a resume) by a HEAD, which sends no body for nothing.
    @Test func theProbeIsTheFilesGETUnlessTheFileMayBeThere() async throws {
        let fresh = try await name("/gen/20000?seed=1")
        let answer = try #require(fresh.answer?.take())
        #expect(answer.head.status == 206)
        answer.connection.close()

        _ = FileManager.default.createFile(atPath: folder.path + "/30000.part", contents: Data())
        #expect(try await name("/gen/30000?seed=2").answer == nil)
        _ = FileManager.default.createFile(atPath: folder.path + "/40000", contents: Data())
        #expect(try await name("/gen/40000?seed=3").answer == nil)
        // Paced by its own limiter, the answer could not go to another download's connections.
        var limited = Configuration()
        limited.maximumBytesPerSecond = 1 << 20
        #expect(try await name("/gen/50000?seed=4", limited).answer == nil)
    }

    /// The connections to `port` that are open now (`/proc/net/tcp`, state ESTABLISHED, the remote
    /// end at `port`), by their local address and port.
    static func openConnections(to port: Int) throws -> Set<Substring> {
        // Read to its end: the file's size says 0.
        let handle = try FileHandle(forReadingFrom: URL(filePath: "/proc/net/tcp"))
        defer { try? handle.close() }
        let table = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        let remote = String(format: ":%04X", port)
        var open: Set<Substring> = []
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            if fields.count > 3 && fields[2].hasSuffix(remote) && fields[3] == "01" { open.insert(fields[1]) }
        }
        return open
    }

    /// An item whose download fails before it reads the probe's answer (its output is a folder)
    /// closes that answer's connection at once, not when the batch ends: one connection at a time
    /// is open while the batch runs (two, while the next item ran, before).
    @Test func anAnswerNobodyReadsIsClosedWhenItsItemFails() async throws {
        let port = server.port
        try FileManager.default.createDirectory(
            atPath: folder.path + "/60000", withIntermediateDirectories: false)
        let items = [
            BatchItem(url: server.url("/gen/60000?seed=5"), destination: .folder(URL(filePath: folder.path))),
            BatchItem(
                url: server.url("/gen/\(3 << 20)?seed=6&rate=2000000"),
                destination: .folder(URL(filePath: folder.path)), configuration: .init(connections: .fixed(1))
            ),
        ]
        // The most connections open at once while the batch runs, looked at from a thread of its own:
        // a task on the shared pool could wait out the whole batch on a machine busy with other tests.
        let state = PlainMutex((done: false, most: 0, looks: 0))
        // Connections to this port that were open before (a server of an earlier test that had the
        // same port, whose clients linger) are not the batch's.
        let before = (try? Self.openConnections(to: port)) ?? []
        Thread {
            while !state.withLock({ $0.done }) {
                let open = ((try? Self.openConnections(to: port)) ?? []).subtracting(before).count
                state.withLock {
                    $0.most = max($0.most, open)
                    $0.looks += 1
                }
                usleep(5000)
            }
        }.start()
        let outcomes = await Fastpull.download(items, options: BatchOptions(parallelFiles: 1))
        state.withLock { $0.done = true }
        #expect(outcomes[0].error != nil)
        #expect(outcomes[1].report != nil, "\(outcomes[1].error.map { "\($0)" } ?? "")")
        let (most, looks) = state.withLock { ($0.most, $0.looks) }
        #expect(most == 1, "\(most) connections open at once over \(looks) looks")
    }
}
