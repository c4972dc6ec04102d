/// A third-party server or proxy running as a child process on 127.0.0.1, with a configuration written
/// into its own temporary folder.
///
/// Start one with its type's `start(...)`; stop it with ``stop()`` on every path, or use
/// ``run(_:)``, which does that for you:
///
/// ```swift
/// let nginx = try await NginxServer.start(documentRoot: root)
/// try await nginx.run { nginx in
///     // fetch nginx.url("file.bin"), then read nginx.accessLog
/// }
/// ```
public protocol RealServer: AnyObject, Sendable {
    /// The server's name and version where known, e.g. "nginx 1.22.1".
    var name: String { get }
    /// The plain HTTP port on 127.0.0.1.
    var port: Int { get }
    /// The server's own folder: its configuration, logs, standard output and error.
    var folder: String { get }
    /// The server's access log.
    var accessLog: AccessLog { get }
    /// Stops the server and every process it started, then removes its folder.
    func stop() async
}

extension RealServer {
    /// `http://127.0.0.1:<port>`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Runs `body` with the server and stops the server afterwards, whether `body` returned or threw.
    public func run<T>(_ body: (Self) async throws -> T) async throws -> T {
        let result: T
        do {
            result = try await body(self)
        } catch {
            await stop()
            throw error
        }
        await stop()
        return result
    }
}
