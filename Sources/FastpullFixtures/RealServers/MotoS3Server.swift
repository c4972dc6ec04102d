import Foundation

/// moto's S3 server (PyPI `moto[server]`, run as `python3 -m moto.server`) on 127.0.0.1, in memory.
///
/// ``client`` creates buckets, puts objects and makes presigned GET URLs, SigV4-signed with test
/// credentials. The access log is Werkzeug's request log on standard error: method, path with query,
/// status; no `Range`, no byte counts, no connection ids (moto closes every connection after one
/// response anyway).
public final class MotoS3Server: RealServer {
    /// "moto S3".
    public let name = "moto S3"
    /// The HTTP port on 127.0.0.1.
    public var port: Int { running.ports[0] }
    /// The server's log folder.
    public var folder: String { running.folder }
    /// Werkzeug's request log.
    public let accessLog: AccessLog
    /// A client for this server with the test credentials.
    public let client: S3Client
    private let running: RunningServer

    private init(running: RunningServer, accessLog: AccessLog) {
        self.running = running
        self.accessLog = accessLog
        client = S3Client(
            port: running.ports[0],
            signer: SigV4Signer(
                accessKey: "AKIAFASTPULLINTEROP", secretKey: "fastpull/interop/secret", region: "us-east-1"))
    }

    /// Starts moto's server and returns once its port accepts connections (a second or two: Python
    /// imports).
    public static func start() async throws -> MotoS3Server {
        return try await ServerFolder.creating("moto", permissions: 0o755) { folder in
            let launcher = ServerLauncher(name: "moto", folder: folder, readinessTimeout: .seconds(30)) {
                ports in
                .init(
                    executable: "python3",
                    arguments: ["-m", "moto.server", "-H", "127.0.0.1", "-p", String(ports[0])],
                    environment: [
                        "PYTHONUNBUFFERED": "1", "AWS_ACCESS_KEY_ID": "AKIAFASTPULLINTEROP",
                        "AWS_SECRET_ACCESS_KEY": "fastpull/interop/secret", "AWS_DEFAULT_REGION": "us-east-1",
                    ])
            }
            let running = try await launcher.launch()
            let log = AccessLog(path: launcher.standardError, format: .werkzeug)
            return MotoS3Server(running: running, accessLog: log)
        }
    }

    /// Stops moto and removes its folder.
    public func stop() async {
        await running.stop()
    }
}
