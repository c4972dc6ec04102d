import Foundation

/// dante (Debian's `/usr/sbin/danted`) as a SOCKS5 proxy on 127.0.0.1, in the foreground, without
/// authentication, tunnelling `CONNECT` to loopback only. Its log names each tunnel's destination as
/// the client gave it: a name for a `socks5h://` client, an address for a `socks5://` one.
public final class DanteServer: Sendable {
    /// "dante".
    public let name = "dante"
    /// The SOCKS port on 127.0.0.1.
    public var port: Int { running.ports[0] }
    /// The log file.
    public let logPath: String
    private let running: RunningServer

    private init(running: RunningServer, logPath: String) {
        self.running = running
        self.logPath = logPath
    }

    /// Starts danted and returns once its port accepts connections.
    public static func start() async throws -> DanteServer {
        let executable = try ServerLauncher.executable("/usr/sbin/danted", package: "dante-server")
        return try await ServerFolder.creating("dante", permissions: 0o777) { folder in
            let logPath = folder + "/danted.log"
            let launcher = ServerLauncher(name: "dante", folder: folder, logFiles: [logPath]) { ports in
                let configuration = """
                    # Written by FastpullFixtures.DanteServer.
                    logoutput: \(logPath)
                    debug: 1
                    internal: 127.0.0.1 port = \(ports[0])
                    external: 127.0.0.1
                    socksmethod: none
                    clientmethod: none
                    user.unprivileged: nobody
                    client pass {
                        from: 127.0.0.0/8 to: 0.0.0.0/0
                        log: connect disconnect error
                    }
                    socks pass {
                        from: 127.0.0.0/8 to: 127.0.0.0/8
                        command: connect
                        log: connect disconnect error
                    }

                    """
                try ServerFolder.write(configuration, to: folder + "/danted.conf")
                return .init(
                    executable: executable,
                    arguments: ["-f", folder + "/danted.conf", "-p", folder + "/danted.pid", "-N", "1"])
            }
            let running = try await launcher.launch()
            return DanteServer(running: running, logPath: logPath)
        }
    }

    /// The log so far.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Stops danted and removes its folder.
    public func stop() async {
        await running.stop()
    }
}
