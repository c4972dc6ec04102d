import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// lighttpd (Debian's `/usr/sbin/lighttpd`) serving a document root on 127.0.0.1.
///
/// Its access log has the client's port (one per connection), the `Range` and `If-Range` headers and the
/// body bytes sent. lighttpd buffers its access log for a few seconds; every read of ``accessLog`` first
/// sends it SIGHUP, which makes it write the buffer out.
public final class LighttpdServer: RealServer {
    /// "lighttpd".
    public let name = "lighttpd"
    /// The HTTP port on 127.0.0.1.
    public var port: Int { running.ports[0] }
    /// The server's configuration and log folder.
    public var folder: String { running.folder }
    /// The folder lighttpd serves.
    public let documentRoot: String
    /// The access log.
    public let accessLog: AccessLog
    private let running: RunningServer

    private init(running: RunningServer, documentRoot: String, accessLog: AccessLog) {
        self.running = running
        self.documentRoot = documentRoot
        self.accessLog = accessLog
    }

    /// Starts lighttpd for `documentRoot` and returns once its port accepts connections.
    public static func start(documentRoot: String) async throws -> LighttpdServer {
        let executable = try ServerLauncher.executable("/usr/sbin/lighttpd", package: "lighttpd")
        return try await ServerFolder.creating("lighttpd", permissions: 0o777) { folder in
            let errorLog = folder + "/error.log"
            let accessLogPath = folder + "/access.log"
            let launcher = ServerLauncher(name: "lighttpd", folder: folder, logFiles: [errorLog]) { ports in
                let configuration = """
                    # Written by FastpullFixtures.LighttpdServer.
                    server.document-root = "\(documentRoot)"
                    server.bind = "127.0.0.1"
                    server.port = \(ports[0])
                    server.errorlog = "\(errorLog)"
                    server.pid-file = "\(folder)/lighttpd.pid"
                    server.max-keep-alive-requests = 10000
                    server.max-keep-alive-idle = 30
                    server.modules = ( "mod_accesslog" )
                    accesslog.filename = "\(accessLogPath)"
                    accesslog.format = "%{remote}p\t%m\t%U%q\t%s\t%{Range}i\t%b\t%{If-Range}i"
                    mimetype.assign = ( "" => "application/octet-stream" )

                    """
                try ServerFolder.write(configuration, to: folder + "/lighttpd.conf")
                return .init(executable: executable, arguments: ["-D", "-f", folder + "/lighttpd.conf"])
            }
            let running = try await launcher.launch()
            let log = AccessLog(
                path: accessLogPath, format: .tabSeparated(headers: ["if-range"], escaping: .backslashes),
                flush: { running.process.signal(SIGHUP) })
            return LighttpdServer(running: running, documentRoot: documentRoot, accessLog: log)
        }
    }

    /// Stops lighttpd and removes its folder.
    public func stop() async {
        await running.stop()
    }
}
