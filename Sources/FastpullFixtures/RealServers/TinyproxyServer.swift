import Foundation

/// tinyproxy (Debian's `/usr/bin/tinyproxy`) as a forward proxy on 127.0.0.1, in the foreground (`-d`),
/// with `BasicAuth` for ``credentials`` and `CONNECT` allowed only to ``Options/connectPorts``.
///
/// tinyproxy's log names each request's method and target (absolute URL, or `host:port` for `CONNECT`);
/// it logs no status, header or byte count.
public final class TinyproxyServer: RealProxy {
    /// How to configure tinyproxy.
    public struct Options: Sendable {
        /// The only credentials tinyproxy accepts.
        public var credentials: BasicCredentials
        /// Ports `CONNECT` may reach.
        public var connectPorts: [Int]

        /// Options with `credentials` and `connectPorts`.
        public init(credentials: BasicCredentials, connectPorts: [Int]) {
            self.credentials = credentials
            self.connectPorts = connectPorts
        }
    }

    /// "tinyproxy".
    public let name = "tinyproxy"
    /// The proxy port on 127.0.0.1.
    public var port: Int { running.ports[0] }
    /// The server's configuration and log folder.
    public var folder: String { running.folder }
    /// The log, read as access log entries (its `Request` lines).
    public let accessLog: AccessLog
    /// The credentials tinyproxy accepts.
    public let credentials: BasicCredentials
    private let running: RunningServer

    private init(running: RunningServer, accessLog: AccessLog, credentials: BasicCredentials) {
        self.running = running
        self.accessLog = accessLog
        self.credentials = credentials
    }

    /// Starts tinyproxy and returns once its port accepts connections.
    public static func start(options: Options) async throws -> TinyproxyServer {
        let executable = try ServerLauncher.executable("/usr/bin/tinyproxy", package: "tinyproxy")
        return try await ServerFolder.creating("tinyproxy", permissions: 0o777) { folder in
            let logPath = folder + "/tinyproxy.log"
            let connectPorts = options.connectPorts.map { "ConnectPort \($0)" }.joined(separator: "\n")
            let launcher = ServerLauncher(name: "tinyproxy", folder: folder, logFiles: [logPath]) { ports in
                let configuration = """
                    # Written by FastpullFixtures.TinyproxyServer.
                    Port \(ports[0])
                    Listen 127.0.0.1
                    Timeout 60
                    MaxClients 100
                    LogFile "\(logPath)"
                    LogLevel Connect
                    PidFile "\(folder)/tinyproxy.pid"
                    Allow 127.0.0.1
                    BasicAuth \(options.credentials.user) \(options.credentials.password)
                    \(connectPorts)

                    """
                try ServerFolder.write(configuration, to: folder + "/tinyproxy.conf")
                return .init(executable: executable, arguments: ["-d", "-c", folder + "/tinyproxy.conf"])
            }
            let running = try await launcher.launch()
            let log = AccessLog(path: logPath, format: .tinyproxy)
            return TinyproxyServer(running: running, accessLog: log, credentials: options.credentials)
        }
    }

    /// Stops tinyproxy and removes its folder.
    public func stop() async {
        await running.stop()
    }
}
