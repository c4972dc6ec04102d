import FastpullFixtures
import Foundation

/// An S3 API (moto's server, from PyPI, as the interoperability tests use it) holding the scenario's
/// files in one bucket, downloaded through presigned URLs as S3 users do. moto answers every GET after
/// about 0.1 s whatever its size: the per-request cost of an object store.
final class ObjectStoreBackend: BenchServer {
    private let server: MotoS3Server
    private let client: S3Client
    private let bucket = "bench"
    private var mark: AccessLog.Mark = .start

    var summary: String { "moto S3 server, presigned GET URLs (about 0.1 s per request)" }

    /// Starts moto and uploads `files` (paths relative to `directory`) under the same keys.
    init(directory: String, files: [String]) throws {
        server = try blocking { try await MotoS3Server.start() }
        client = server.client
        let (client, bucket) = (client, bucket)
        do {
            try blocking { try await client.createBucket(bucket) }
            for path in files {
                let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + path))
                _ = try blocking { try await client.putObject(bucket: bucket, key: path, data: data) }
            }
        } catch {
            stop()
            throw error
        }
    }

    func url(for path: String, tls: Bool) -> String {
        client.presignedGetURL(bucket: bucket, key: path)
    }

    func beginRun() throws {
        let log = server.accessLog
        mark = try blocking { await log.mark() }
    }

    /// moto logs requests, not body bytes: the count of GETs and nothing else.
    func endRun() -> ServerStats {
        let (log, mark) = (server.accessLog, mark)
        let entries = (try? blocking { await log.entries(since: mark) }) ?? []
        var stats = ServerStats()
        stats.requests = entries.filter { $0.method == "GET" }.count
        return stats
    }

    var liveBodyBytes: Int64? { nil }

    func stop() {
        let server = server
        try? blocking { await server.stop() }
    }
}
