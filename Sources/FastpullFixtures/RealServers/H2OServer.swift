import Foundation

/// h2o (Debian's `/usr/bin/h2o`) serving a document root on 127.0.0.1 over HTTP/1.1.
///
/// Its access log has h2o's connection id, the `Range` and `If-Range` headers and the body bytes sent.
/// Started as root, h2o serves as `nobody`.
public final class H2OServer: RealServer {
    /// "h2o".
    public let name = "h2o"
    /// The HTTP port on 127.0.0.1.
    public var port: Int { running.ports[0] }
    /// The server's configuration and log folder.
    public var folder: String { running.folder }
    /// The folder h2o serves.
    public let documentRoot: String
    /// The access log.
    public let accessLog: AccessLog
    private let running: RunningServer

    private init(running: RunningServer, documentRoot: String, accessLog: AccessLog) {
        self.running = running
        self.documentRoot = documentRoot
        self.accessLog = accessLog
    }

    /// Starts h2o for `documentRoot` and returns once its port accepts connections.
    public static func start(documentRoot: String) async throws -> H2OServer {
        let executable = try ServerLauncher.executable("/usr/bin/h2o", package: "h2o")
        return try await ServerFolder.creating("h2o", permissions: 0o777) { folder in
            let errorLog = folder + "/error.log"
            let accessLogPath = folder + "/access.log"
            let launcher = ServerLauncher(name: "h2o", folder: folder, logFiles: [errorLog]) { ports in
                let configuration = """
                    # Written by FastpullFixtures.H2OServer.
                    listen:
                      host: 127.0.0.1
                      port: \(ports[0])
                    num-threads: 2
                    error-log: "\(errorLog)"
                    access-log:
                      path: "\(accessLogPath)"
                      format: "%{connection-id}x\\t%m\\t%U%q\\t%s\\t%{range}i\\t%b\\t%{if-range}i"
                    hosts:
                      default:
                        paths:
                          /:
                            file.dir: "\(documentRoot)"

                    """
                try ServerFolder.write(configuration, to: folder + "/h2o.conf")
                return .init(executable: executable, arguments: ["-c", folder + "/h2o.conf"])
            }
            let running = try await launcher.launch()
            let log = AccessLog(
                path: accessLogPath, format: .tabSeparated(headers: ["if-range"], escaping: .backslashes))
            return H2OServer(running: running, documentRoot: documentRoot, accessLog: log)
        }
    }

    /// Stops h2o (and its backtrace helper) and removes its folder.
    public func stop() async {
        await running.stop()
    }
}
