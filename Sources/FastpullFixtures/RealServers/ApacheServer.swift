import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Apache httpd (Debian's `/usr/sbin/apache2`, event MPM) serving a document root on 127.0.0.1.
///
/// Run directly with `-f` and a minimal configuration that loads only the modules it needs from
/// `/usr/lib/apache2/modules`, so Debian's `/etc/apache2` and `apache2ctl` play no part. Its access log
/// has the client's port (one per connection), the `Range`, `If-Range` and `Authorization` headers and
/// the body bytes sent.
public final class ApacheServer: RealServer {
    /// How to configure Apache.
    public struct Options: Sendable {
        /// Whether responses carry an `ETag` (Apache's default, `FileETag MTime Size`); without one
        /// (`FileETag None`, common behind load balancers) a client can only validate by date.
        public var etags: Bool

        /// Options with Apache's defaults.
        public init(etags: Bool = true) {
            self.etags = etags
        }
    }

    /// "apache2".
    public let name = "apache2"
    /// The HTTP port on 127.0.0.1.
    public var port: Int { running.ports[0] }
    /// The server's configuration and log folder.
    public var folder: String { running.folder }
    /// The folder Apache serves.
    public let documentRoot: String
    /// The access log.
    public let accessLog: AccessLog
    private let running: RunningServer

    private init(running: RunningServer, documentRoot: String, accessLog: AccessLog) {
        self.running = running
        self.documentRoot = documentRoot
        self.accessLog = accessLog
    }

    /// Starts Apache for `documentRoot` and returns once its port accepts connections.
    public static func start(documentRoot: String, options: Options = Options()) async throws -> ApacheServer
    {
        let executable = try ServerLauncher.executable("/usr/sbin/apache2", package: "apache2")
        let modules = "/usr/lib/apache2/modules"
        for module in ["mod_mpm_event.so", "mod_authz_core.so"] {
            _ = try ServerLauncher.installed("\(modules)/\(module)", package: "apache2")
        }
        return try await ServerFolder.creating("apache2", permissions: 0o777) { folder in
            let errorLog = folder + "/error.log"
            let accessLogPath = folder + "/access.log"
            // As root, Apache serves from children running as an unprivileged user (it refuses root).
            let user = getuid() == 0 ? "User nobody\nGroup nogroup\n" : ""
            let launcher = ServerLauncher(name: "apache2", folder: folder, logFiles: [errorLog]) { ports in
                let configuration = """
                    # Written by FastpullFixtures.ApacheServer.
                    ServerRoot "\(folder)"
                    DefaultRuntimeDir "\(folder)"
                    PidFile "\(folder)/apache2.pid"
                    ServerName 127.0.0.1
                    Listen 127.0.0.1:\(ports[0])
                    LoadModule mpm_event_module \(modules)/mod_mpm_event.so
                    LoadModule authz_core_module \(modules)/mod_authz_core.so
                    \(user)StartServers 1
                    ServerLimit 2
                    ThreadsPerChild 32
                    MaxRequestWorkers 64
                    KeepAlive On
                    MaxKeepAliveRequests 0
                    KeepAliveTimeout 30
                    ErrorLog "\(errorLog)"
                    LogLevel warn
                    LogFormat "%{remote}p\\t%m\\t%U%q\\t%>s\\t%{Range}i\\t%B\\t%{If-Range}i\\t%{Authorization}i" interop
                    CustomLog "\(accessLogPath)" interop
                    FileETag \(options.etags ? "MTime Size" : "None")
                    DocumentRoot "\(documentRoot)"
                    <Directory "\(documentRoot)">
                        Require all granted
                    </Directory>

                    """
                try ServerFolder.write(configuration, to: folder + "/apache2.conf")
                return .init(
                    executable: executable, arguments: ["-f", folder + "/apache2.conf", "-DFOREGROUND"])
            }
            let running = try await launcher.launch()
            let log = AccessLog(
                path: accessLogPath,
                format: .tabSeparated(headers: ["if-range", "authorization"], escaping: .backslashes))
            return ApacheServer(running: running, documentRoot: documentRoot, accessLog: log)
        }
    }

    /// Stops Apache and removes its folder.
    public func stop() async {
        await running.stop()
    }
}
