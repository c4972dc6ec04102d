import Foundation

/// nginx as a caching reverse proxy on 127.0.0.1 in front of an origin on another loopback port: what a
/// fleet of machines shares so that the origin sends a file about once, however many machines pull it.
///
/// Its cache lives in its own folder (removed with it). Its access log is laid out as
/// ``NginxServer``'s, with nginx's `$upstream_cache_status` (`HIT`, `MISS`, `EXPIRED`, …) as a last
/// column for a person reading a kept folder (see ``ServerFolder/remove(_:)``).
public final class NginxCache: RealServer {
    /// How to configure the cache.
    public struct Options: Sendable {
        /// The origin's plain HTTP port on 127.0.0.1.
        public var originPort: Int
        /// The size of the slices (nginx's `slice`) the cache fetches and stores, each under its own key,
        /// or nil for a cache of whole responses (nginx's default: it drops the client's `Range` and
        /// fetches the whole file from the origin).
        public var sliceSize: Int?
        /// Whether a request for something being fetched into the cache waits for it
        /// (`proxy_cache_lock`) instead of fetching it from the origin as well.
        public var cacheLock: Bool

        /// Options for a cache in front of `originPort`, in 1 MiB slices with the cache lock on by
        /// default.
        public init(originPort: Int, sliceSize: Int? = 1 << 20, cacheLock: Bool = true) {
            self.originPort = originPort
            self.sliceSize = sliceSize
            self.cacheLock = cacheLock
        }
    }

    /// "nginx cache".
    public let name = "nginx cache"
    /// The port on 127.0.0.1 clients pull from.
    public var port: Int { running.ports[0] }
    /// The server's configuration, log and cache folder.
    public var folder: String { running.folder }
    /// The cache's access log: what its clients asked for.
    public let accessLog: AccessLog
    private let running: RunningServer

    private init(running: RunningServer) {
        self.running = running
        accessLog = NginxServer.accessLog(in: running.folder)
    }

    /// Starts the cache and returns once its port accepts connections.
    public static func start(options: Options) async throws -> NginxCache {
        try await ServerFolder.creating("nginx-cache", permissions: 0o777) { folder in
            let running = try await NginxServer.launch(folder: folder, portCount: 1) { ports in
                """
                proxy_cache_path \(folder)/cache levels=1:2 keys_zone=fleet:10m max_size=4g inactive=1h use_temp_path=off;
                upstream origin {
                    server 127.0.0.1:\(options.originPort);
                    keepalive 16;
                }
                server {
                    listen 127.0.0.1:\(ports[0]);
                    server_name localhost 127.0.0.1;
                    location / {
                        proxy_pass http://origin;
                        proxy_http_version 1.1;
                        proxy_set_header Connection "";
                        proxy_cache fleet;
                        proxy_cache_valid 200 206 1h;
                        proxy_cache_lock \(options.cacheLock ? "on" : "off");
                        \(sliceLines(options.sliceSize))
                    }
                }
                """
            }
            return NginxCache(running: running)
        }
    }

    /// Stops nginx (master and workers) and removes its folder and cache.
    public func stop() async {
        await running.stop()
    }

    /// The directives that fetch and store `size`-byte slices: every slice is its own cache entry, asked
    /// of the origin with its own `Range`.
    private static func sliceLines(_ size: Int?) -> String {
        guard let size else { return "" }
        return """
            slice \(size);
                    proxy_cache_key $uri$is_args$args$slice_range;
                    proxy_set_header Range $slice_range;
            """
    }
}
