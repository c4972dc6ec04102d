import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// nginx from `apt`, run as a child from a configuration generated in its own folder.
///
/// One server block listens on a plain and a TLS port and serves the source folder under one location per
/// rate rule: `/plain/` (no limit), `/throttled/` (`limit_rate`) and `/stragglers/` (`limit_rate
/// $variable`, nginx ≥ 1.17, from a `map` on `$connection`, nginx's connection serial number, so every K-th
/// connection is slow). nginx limits each request, not each connection; on keep-alive connections that
/// is the same thing, save a small allowance per request (see ``rateLimitedChunk``). `sendfile` is on; an
/// access log with `$connection`, `$body_bytes_sent` and `$server_port` counts what was sent in each run
/// (and by each ``Site``).
final class NginxServer: BenchServer {
    /// One location of the generated configuration.
    struct Location: Hashable {
        var name: String
        var rate: RateRule
    }

    /// A server block of its own, for the mirror scenarios: one mirror on an address of its own
    /// (127.0.0.2…, so that tools which count connections per host name see several hosts), serving
    /// `documentRoot` under `/plain/` and answering 503 beyond `connectionLimit` requests at once from one
    /// client address (`limit_conn`, a zone of its own), as public mirrors do.
    struct Site: Hashable {
        /// How the report names it.
        var label: String
        var address: String
        var documentRoot: String
        var connectionLimit: Int?
        /// Chosen when nginx first starts.
        var port = 0
    }

    private let executable: String
    private let directory: String
    private let documentRoot: String
    private let locations: [Location]
    private(set) var sites: [Site]
    private let certificate: String
    private let key: String
    /// What nginx's command line runs under, e.g. `ip netns exec NS` (empty: nothing).
    private let commandPrefix: [String]
    private var child: ChildProcess?
    private var logOffset: UInt64 = 0
    private(set) var port = 0
    private(set) var tlsPort = 0

    let summary: String

    /// Prepares (does not start) nginx in `directory` for `documentRoot`.
    init(
        executable: String, directory: String, documentRoot: String, locations: [Location],
        certificate: String, key: String, commandPrefix: [String] = [], sites: [Site] = []
    ) {
        self.commandPrefix = commandPrefix
        self.sites = sites
        self.executable = executable
        self.directory = directory
        self.documentRoot = documentRoot
        self.locations = locations
        self.certificate = certificate
        self.key = key
        summary = "nginx " + (Self.version(executable) ?? "(unknown version)")
    }

    /// nginx's version, e.g. "1.22.1".
    static func version(_ executable: String) -> String? {
        guard let text = captureOutput(executable, ["-v"], mergeErrors: true),
            let range = text.range(of: "nginx/")
        else { return nil }
        return String(text[range.upperBound...].prefix { !$0.isWhitespace })
    }

    private var accessLog: String { directory + "/access.log" }
    private var errorLog: String { directory + "/error.log" }
    private var pidFile: String { directory + "/nginx.pid" }
    private var configFile: String { directory + "/nginx.conf" }

    /// The configuration text (also written to `nginx.conf` in the server's folder).
    func configuration() -> String {
        var maps: [String] = []
        var blocks: [String] = []
        for location in locations {
            var directives = ["alias \(documentRoot)/;"]
            switch location.rate {
            case .unlimited:
                break
            case .perConnection(let rate):
                directives.append("limit_rate \(rate);")
                directives.append("sendfile_max_chunk \(Self.rateLimitedChunk);")
            case .stragglers(let every, let slow, let fast):
                let variable = "$fpb_rate_\(location.name.replacingOccurrences(of: "-", with: "_"))"
                maps.append(
                    """
                        map $connection \(variable) {
                            "\(Self.multipleOfPattern(every))" \(slow);
                            default \(fast);
                        }
                    """)
                directives.append("limit_rate \(variable);")
                directives.append("sendfile_max_chunk \(Self.rateLimitedChunk);")
            }
            blocks.append(
                "        location /\(location.name)/ {\n"
                    + directives.map { "            \($0)\n" }.joined() + "        }")
        }
        var siteBlocks: [String] = []
        for (index, site) in sites.enumerated() {
            var limit = ""
            if let connections = site.connectionLimit {
                maps.append("    limit_conn_zone $binary_remote_addr zone=fpb_site_\(index):1m;")
                limit = "\n            limit_conn fpb_site_\(index) \(connections);"
            }
            siteBlocks.append(
                """
                    server {
                        listen \(site.address):\(site.port) sndbuf=\(Self.siteSendBuffer);
                        root \(site.documentRoot);
                        location /plain/ {
                            alias \(site.documentRoot)/;\(limit)
                        }
                    }
                """)
        }
        if !sites.isEmpty { maps.append("    limit_conn_status 503;") }
        return """
            # Generated by fastpull-bench; regenerated on every run.
            daemon off;
            master_process on;
            worker_processes auto;
            pid \(pidFile);
            error_log \(errorLog) warn;
            events {
                worker_connections 4096;
            }
            http {
                types { }
                default_type application/octet-stream;
                log_format fastpull_bench '$connection $status $body_bytes_sent $request_method $uri $server_port';
                access_log \(accessLog) fastpull_bench;
                sendfile on;
                tcp_nopush on;
                tcp_nodelay on;
                keepalive_timeout 65;
                keepalive_requests 1000000;
                client_body_temp_path \(directory)/client-body;
                proxy_temp_path \(directory)/proxy;
                fastcgi_temp_path \(directory)/fastcgi;
                uwsgi_temp_path \(directory)/uwsgi;
                scgi_temp_path \(directory)/scgi;
            \(maps.joined(separator: "\n"))
                server {
                    listen 127.0.0.1:\(port);
                    listen 127.0.0.1:\(tlsPort) ssl;
                    ssl_certificate \(certificate);
                    ssl_certificate_key \(key);
                    ssl_protocols TLSv1.2 TLSv1.3;
                    root \(documentRoot);
            \(blocks.joined(separator: "\n"))
                }
            \(siteBlocks.joined(separator: "\n"))
            }

            """
    }

    /// nginx applies `limit_rate` per request and sends one `sendfile_max_chunk` (2 MiB by default) before
    /// its first delay, so a client asking for 1 MiB ranges would never be limited at all. 64 KiB keeps
    /// that free allowance small (about 3 ms at 20 MB/s per request).
    static let rateLimitedChunk = "64k"

    /// The send buffer of a site's connections. nginx counts a request (for `limit_conn`, and in the
    /// access log's bytes) as done once its last byte is in the socket's buffer, and the kernel's own
    /// sizing lets that buffer hold megabytes: a shaped 1 MiB answer would be "done" long before it
    /// arrived, another request would take its place, and a mirror would serve more connections than
    /// its limit, and count bytes that a client which closed its connection never got. With 64 KiB
    /// (the kernel doubles it) a request ends at most ~128 KiB before its last byte arrives.
    static let siteSendBuffer = "64k"

    /// A `map` regex matching connection numbers that are multiples of `every` (2, 5 or 10).
    private static func multipleOfPattern(_ every: Int) -> String {
        switch every {
        case 2: return "~[02468]$"
        case 5: return "~[05]$"
        case 10: return "~0$"
        default:
            preconditionFailure("nginx stragglers support every 2nd, 5th or 10th connection, not \(every)")
        }
    }

    /// Writes the configuration and starts nginx; returns once its sockets listen.
    func start() throws {
        if port == 0 {
            port = try LoopbackPort.free()
            tlsPort = try LoopbackPort.free()
            for index in sites.indices { sites[index].port = try LoopbackPort.free() }
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try configuration().write(toFile: configFile, atomically: true, encoding: .utf8)
        unlink(pidFile)
        let command = commandPrefix + [executable, "-e", errorLog, "-p", directory, "-c", configFile]
        let process = try ChildProcess(
            executable: command[0], arguments: Array(command.dropFirst()),
            standardOutput: directory + "/stdout.log", standardError: directory + "/stderr.log")
        child = process
        // nginx writes its pid file after it has bound its sockets; waiting for it (instead of connecting)
        // keeps connection number 1 for the first client.
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let exit = process.wait(seconds: 0.01) {
                child = nil
                let log = (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? ""
                let stderr = (try? String(contentsOfFile: directory + "/stderr.log", encoding: .utf8)) ?? ""
                throw BenchError("nginx exited (\(exit.statusText)): \(stderr)\(log)")
            }
            if let text = try? String(contentsOfFile: pidFile, encoding: .utf8), !text.isEmpty { return }
        }
        stop()
        throw BenchError("nginx did not start within 10 s; see \(errorLog)")
    }

    /// Stops nginx (fast shutdown) and waits for it.
    func stop() {
        guard let child else { return }
        child.send(SIGTERM)
        if child.wait(seconds: 10) == nil {
            child.send(SIGKILL)
            _ = child.wait()
        }
        self.child = nil
    }

    /// Stops and starts nginx on the same ports, so connection numbers start again at 1.
    func restart() throws {
        stop()
        try start()
    }

    func url(for path: String, tls: Bool) -> String {
        tls ? "https://127.0.0.1:\(tlsPort)/\(path)" : "http://127.0.0.1:\(port)/\(path)"
    }

    /// The URL of `path` on the `index`-th site.
    func url(for path: String, site index: Int) -> String {
        "http://\(sites[index].address):\(sites[index].port)/\(path)"
    }

    func beginRun() throws {
        logOffset = Self.fileSize(accessLog)
    }

    func endRun() -> ServerStats {
        // A request is logged when nginx finishes it; wait until the log stops growing.
        var size = Self.fileSize(accessLog)
        var stableSince = Date()
        let deadline = Date().addingTimeInterval(3)
        while Date() < deadline && Date().timeIntervalSince(stableSince) < 0.1 {
            usleep(10_000)
            let now = Self.fileSize(accessLog)
            if now != size {
                size = now
                stableSince = Date()
            }
        }
        guard let handle = FileHandle(forReadingAtPath: accessLog) else { return ServerStats() }
        defer { try? handle.close() }
        try? handle.seek(toOffset: logOffset)
        let data = (try? handle.readToEnd()) ?? Data()
        logOffset += UInt64(data.count)
        var stats = ServerStats()
        var connections = Set<Substring>()
        let labels = Dictionary(
            sites.map { ("\($0.port)", $0.label) }, uniquingKeysWith: { first, _ in first })
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 3 else { continue }
            let bytes = Int64(fields[2]) ?? 0
            stats.requests += 1
            stats.bodyBytes += bytes
            connections.insert(fields[0])
            if fields[1] == "503" { stats.refused += 1 }
            if fields.count >= 6, let label = labels[String(fields[5])] {
                stats.bodyBytesBySource[label, default: 0] += bytes
            }
        }
        for site in sites where stats.bodyBytesBySource[site.label] == nil {
            stats.bodyBytesBySource[site.label] = 0
        }
        stats.connections = connections.count
        return stats
    }

    var liveBodyBytes: Int64? { nil }

    private static func fileSize(_ path: String) -> UInt64 {
        var info = stat()
        return stat(path, &info) == 0 ? UInt64(info.st_size) : 0
    }
}
