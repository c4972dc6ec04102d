import FastpullFixtures
import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP
@testable import FastpullNet

/// A batch names a file from the server's answer: the probe that names it is the file's first GET,
/// whose answer its download reads, unless the file may be there already.
@Suite("A batch's naming probe")
struct NamingProbeTests {
    let server: FixtureServer
    let folder = TemporaryFolder()

    init() throws {
        server = try FixtureServer()
    }

    func name(_ path: String, _ configuration: Configuration = .init()) async throws -> Probed {
        let cache = ConnectionCache(
            tlsOptions: TLSOptions(caFile: configuration.tls.caFile, insecure: configuration.tls.insecure),
            timeouts: Timeouts(connect: configuration.timeouts.connect, idle: configuration.timeouts.idle))
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
        limited.connections.maximumBytesPerSecond = 1 << 20
        #expect(try await name("/gen/50000?seed=4", limited).answer == nil)
    }

    /// This process's own sockets connected to `port` on loopback now, each as descriptor and inode
    /// (a descriptor number closed and opened again is another socket). Told by asking each of the
    /// process's descriptors (`/proc/self/fd`) for its peer, so no other process's connection is
    /// ever counted; the fixture server's sockets (in this process too) have a client port as their
    /// peer, not `port`.
    static func openConnections(to port: Int) -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        var open: Set<String> = []
        for name in names {
            guard let descriptor = Int32(name) else { continue }
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let found = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(descriptor, $0, &length) }
            }
            guard found == 0, address.sin_family == sa_family_t(AF_INET),
                Int(UInt16(bigEndian: address.sin_port)) == port
            else { continue }
            var info = stat()
            guard fstat(descriptor, &info) == 0 else { continue }
            open.insert("\(descriptor):\(info.st_ino)")
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
        // Sockets to this port that were open before (to a server of an earlier test that had the
        // same port, whose clients linger) are not the batch's.
        let before = Self.openConnections(to: port)
        Thread {
            while !state.withLock({ $0.done }) {
                let open = Self.openConnections(to: port).subtracting(before).count
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

    /// A folder at the name the server gives is refused before the file is fetched (the download
    /// looks at it, as it did before the batch's look could tell it "nothing there"): the error says
    /// it is a folder, and no more than the naming probe's first bytes were sent.
    @Test func aFolderAtTheServersNameIsRefusedBeforeTheFileIsFetched() async throws {
        let size = 4 << 20
        try FileManager.default.createDirectory(
            atPath: folder.path + "/\(size)", withIntermediateDirectories: true)
        let outcomes = await Fastpull.download(
            [
                BatchItem(
                    url: server.url("/gen/\(size)?seed=3"), destination: .folder(URL(filePath: folder.path)))
            ])
        let error = try #require(outcomes.first?.error)
        #expect(error.message.contains("is a folder"), "\(error)")
        #expect(server.stats.bodyBytesSent < size / 2, "\(server.stats)")
    }
}
