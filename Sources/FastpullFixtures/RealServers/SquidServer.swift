import Foundation

/// squid (Debian's `/usr/sbin/squid`) as a forward proxy on 127.0.0.1, in the foreground (`-N`), with
/// Basic proxy authentication through its `basic_ncsa_auth` helper and a password file written for
/// ``credentials``.
///
/// It forwards absolute-form requests and tunnels `CONNECT` only to ``Options/allowedPorts`` and caches
/// nothing. Its access log has the client's port (one per connection), method, URL (`host:port` for
/// `CONNECT`), status, the `Range`, `If-Range`, `Authorization` and `Proxy-Authorization` request headers,
/// and the reply size (headers included).
public final class SquidServer: RealProxy {
    /// How to configure squid.
    public struct Options: Sendable {
        /// The only credentials squid accepts.
        public var credentials: BasicCredentials
        /// Origin ports squid may forward to or tunnel to; every other port is refused.
        public var allowedPorts: [Int]

        /// Options with `credentials` and `allowedPorts`.
        public init(credentials: BasicCredentials, allowedPorts: [Int]) {
            self.credentials = credentials
            self.allowedPorts = allowedPorts
        }
    }

    /// "squid".
    public let name = "squid"
    /// The proxy port on 127.0.0.1.
    public var port: Int { running.ports[0] }
    /// The server's configuration and log folder.
    public var folder: String { running.folder }
    /// The access log.
    public let accessLog: AccessLog
    /// The credentials squid accepts.
    public let credentials: BasicCredentials
    private let running: RunningServer

    private init(running: RunningServer, accessLog: AccessLog, credentials: BasicCredentials) {
        self.running = running
        self.accessLog = accessLog
        self.credentials = credentials
    }

    /// Starts squid and returns once its port accepts connections (squid takes about a second).
    public static func start(options: Options) async throws -> SquidServer {
        let executable = try ServerLauncher.executable("/usr/sbin/squid", package: "squid")
        let helper = try ServerLauncher.executable("/usr/lib/squid/basic_ncsa_auth", package: "squid")
        // squid drops root for its own `proxy` user, which must write the logs.
        return try await ServerFolder.creating("squid", permissions: 0o777) { folder in
            let passwords = folder + "/passwd"
            try ServerFolder.write(try await options.credentials.htpasswdLine(in: folder), to: passwords)
            let cacheLog = folder + "/cache.log"
            let accessLogPath = folder + "/access.log"
            let ports = options.allowedPorts.map(String.init).joined(separator: " ")
            let launcher = ServerLauncher(name: "squid", folder: folder, logFiles: [cacheLog]) { listen in
                let configuration = """
                    # Written by FastpullFixtures.SquidServer.
                    http_port 127.0.0.1:\(listen[0])
                    visible_hostname localhost
                    pid_filename \(folder)/squid.pid
                    cache_log \(cacheLog)
                    coredump_dir \(folder)
                    logformat interop %>p\t%rm\t%ru\t%>Hs\t%{Range}>h\t%<st\t%{If-Range}>h\t%{Authorization}>h\t%{Proxy-Authorization}>h
                    access_log stdio:\(accessLogPath) interop
                    auth_param basic program \(helper) \(passwords)
                    auth_param basic children 2 startup=1 idle=1
                    auth_param basic realm fastpull-interop
                    acl authenticated proxy_auth REQUIRED
                    acl test_ports port \(ports)
                    http_access deny !test_ports
                    http_access allow authenticated
                    http_access deny all
                    cache deny all
                    cache_mem 8 MB
                    shutdown_lifetime 0 seconds
                    netdb_filename none
                    pinger_enable off
                    icp_port 0
                    htcp_port 0

                    """
                try ServerFolder.write(configuration, to: folder + "/squid.conf")
                return .init(executable: executable, arguments: ["-N", "-f", folder + "/squid.conf"])
            }
            let running = try await launcher.launch()
            let log = AccessLog(
                path: accessLogPath,
                format: .tabSeparated(
                    headers: ["if-range", "authorization", "proxy-authorization"], escaping: .percent))
            return SquidServer(running: running, accessLog: log, credentials: options.credentials)
        }
    }

    /// Stops squid and its authentication helpers, and removes its folder.
    public func stop() async {
        await running.stop()
    }
}
