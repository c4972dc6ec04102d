import Foundation

/// nginx (Debian's `/usr/sbin/nginx`) serving a document root on a plain and a TLS port of 127.0.0.1.
///
/// Its access log has nginx's connection serial number, the `Range`, `If-Range`, `Authorization` and
/// `Proxy-Authorization` request headers and the body bytes sent. With ``Options/basicAuth`` every
/// request needs those credentials (nginx's `auth_basic`).
public final class NginxServer: RealServer {
    /// How to configure nginx.
    public struct Options: Sendable {
        /// Credentials every request must carry (`Authorization: Basic`), or nil for none.
        public var basicAuth: BasicCredentials?
        /// The TLS certificate chain (PEM).
        public var certificate: String
        /// The TLS private key (PEM).
        public var key: String
        /// The network namespace nginx runs in (its ports are on that namespace's 127.0.0.1), or nil.
        public var namespace: NetworkNamespace?
        /// A PEM file of certificate authorities: with it, the TLS port requires a client certificate
        /// they issued (nginx's `ssl_verify_client on`; without one nginx answers 400).
        public var clientCertificateAuthority: String? = nil
        /// More directives for the `server` block (a `location` that sets a cookie, say).
        public var serverLines: String = ""

        /// Options with the repository's test certificate for `localhost`/`127.0.0.1`.
        public init(
            basicAuth: BasicCredentials? = nil,
            certificate: String = FixturePaths.certificatesDirectory + "/server.pem",
            key: String = FixturePaths.certificatesDirectory + "/server.key",
            namespace: NetworkNamespace? = nil
        ) {
            self.basicAuth = basicAuth
            self.certificate = certificate
            self.key = key
            self.namespace = namespace
        }
    }

    /// "nginx".
    public let name = "nginx"
    /// The plain HTTP port on 127.0.0.1.
    public var port: Int { running.ports[0] }
    /// The TLS port on 127.0.0.1.
    public var tlsPort: Int { running.ports[1] }
    /// The server's configuration and log folder.
    public var folder: String { running.folder }
    /// The folder nginx serves.
    public let documentRoot: String
    /// The access log.
    public let accessLog: AccessLog
    private let running: RunningServer

    private init(running: RunningServer, documentRoot: String, accessLog: AccessLog) {
        self.running = running
        self.documentRoot = documentRoot
        self.accessLog = accessLog
    }

    /// `https://127.0.0.1:<tlsPort>`.
    public var tlsBaseURL: String { "https://127.0.0.1:\(tlsPort)" }

    /// Starts nginx for `documentRoot` and returns once both ports accept connections.
    public static func start(documentRoot: String, options: Options = Options()) async throws -> NginxServer {
        return try await ServerFolder.creating("nginx", permissions: 0o777) { folder in
            var authLines = ""
            if let credentials = options.basicAuth {
                try ServerFolder.write(
                    try await credentials.htpasswdLine(in: folder), to: folder + "/htpasswd")
                authLines = """
                    auth_basic "fastpull-interop";
                        auth_basic_user_file \(folder)/htpasswd;
                    """
            }
            let running = try await launch(
                folder: folder, portCount: 2, namespace: options.namespace
            ) { ports in
                """
                server {
                    listen 127.0.0.1:\(ports[0]);
                    listen 127.0.0.1:\(ports[1]) ssl;
                    server_name localhost 127.0.0.1;
                    ssl_certificate \(options.certificate);
                    ssl_certificate_key \(options.key);
                    ssl_protocols TLSv1.2 TLSv1.3;
                    root \(documentRoot);
                    \(authLines)
                    \(options.clientCertificateAuthority.map { "ssl_client_certificate \($0);\n    ssl_verify_client on;" } ?? "")
                    \(options.serverLines)
                }
                """
            }
            return NginxServer(
                running: running, documentRoot: documentRoot, accessLog: accessLog(in: folder))
        }
    }

    /// Stops nginx (master and workers) and removes its folder.
    public func stop() async {
        await running.stop()
    }

    /// Writes an nginx configuration into `folder` whose `http` block holds `httpBlock` (given the free
    /// ports picked for it) after the settings every nginx here shares: two workers, logs, temporary
    /// folders and the access log format ``accessLog(in:)`` reads. Starts nginx in the foreground and
    /// returns once every port accepts connections.
    static func launch(
        folder: String, portCount: Int, namespace: NetworkNamespace? = nil,
        httpBlock: @escaping ([Int]) -> String
    ) async throws -> RunningServer {
        let executable = try ServerLauncher.executable("/usr/sbin/nginx", package: "nginx")
        let errorLog = folder + "/error.log"
        var launcher = ServerLauncher(
            name: "nginx", folder: folder, portCount: portCount, logFiles: [errorLog]
        ) { ports in
            let configuration = """
                # Written by FastpullFixtures.
                daemon off;
                master_process on;
                worker_processes 2;
                pid \(folder)/nginx.pid;
                error_log \(errorLog) notice;
                events {
                    worker_connections 1024;
                }
                http {
                    types { }
                    default_type application/octet-stream;
                    log_format interop "$connection\\t$request_method\\t$request_uri\\t$status\\t$http_range\\t$body_bytes_sent\\t$http_if_range\\t$http_authorization\\t$http_proxy_authorization\\t$upstream_cache_status";
                    access_log \(folder)/access.log interop;
                    sendfile on;
                    tcp_nodelay on;
                    keepalive_timeout 65;
                    keepalive_requests 100000;
                    client_body_temp_path \(folder)/client-body;
                    proxy_temp_path \(folder)/proxy;
                    fastcgi_temp_path \(folder)/fastcgi;
                    uwsgi_temp_path \(folder)/uwsgi;
                    scgi_temp_path \(folder)/scgi;
                    \(httpBlock(ports).replacingOccurrences(of: "\n", with: "\n    "))
                }

                """
            try ServerFolder.write(configuration, to: folder + "/nginx.conf")
            return .init(
                executable: executable,
                arguments: ["-e", errorLog, "-p", folder + "/", "-c", folder + "/nginx.conf"])
        }
        launcher.namespace = namespace
        return try await launcher.launch()
    }

    /// The access log that ``launch(folder:portCount:namespace:httpBlock:)`` configures in `folder`.
    static func accessLog(in folder: String) -> AccessLog {
        AccessLog(
            path: folder + "/access.log",
            format: .tabSeparated(
                headers: ["if-range", "authorization", "proxy-authorization"], escaping: .backslashes))
    }
}
