import Foundation

/// Starts one real server: picks free loopback ports, has the server's configuration written for them,
/// spawns the server and waits until every port accepts connections (polling a connect every 20 ms, at
/// most ``readinessTimeout``; no fixed sleeps). When the server exits because a port was taken meanwhile,
/// it tries again with new ports; any other early exit or a timeout is an error that quotes the server's
/// logs.
struct ServerLauncher {
    /// How to run the server once its configuration is written.
    struct Command {
        var executable: String
        var arguments: [String]
        var environment: [String: String] = [:]
    }

    /// The server's name in messages, e.g. "nginx".
    var name: String
    /// The server's own folder: configuration, logs, `stdout.log`, `stderr.log`.
    var folder: String
    /// How many ports the server listens on.
    var portCount = 1
    /// Log files (besides standard output and error) that say why a start failed; removed before each
    /// attempt so a retry's messages are its own.
    var logFiles: [String] = []
    /// The longest wait for the ports to accept connections.
    var readinessTimeout: Duration = .seconds(10)
    /// The network namespace the server runs in, or nil for this process's own loopback.
    var namespace: NetworkNamespace? = nil
    /// Writes the configuration for these ports and says how to start the server.
    var prepare: ([Int]) throws -> Command

    var standardOutput: String { folder + "/stdout.log" }
    var standardError: String { folder + "/stderr.log" }

    /// Starts the server and returns it, with its folder and ports, once the ports all accept
    /// connections.
    func launch() async throws -> RunningServer {
        var lastError: RealServerError?
        for _ in 0..<3 {
            let ports = try (0..<portCount).map { _ in try LoopbackPort.free() }
            for file in logFiles + [standardOutput, standardError] { unlink(file) }
            var command = try prepare(ports)
            if let namespace {
                (command.executable, command.arguments) = namespace.command(
                    command.executable, command.arguments)
            }
            let process = try ServerProcess(
                executable: command.executable, arguments: command.arguments,
                environment: command.environment, standardOutput: standardOutput,
                standardError: standardError)
            let deadline = ContinuousClock.now + readinessTimeout
            while true {
                if let exit = process.exit {
                    let output = logTails()
                    let error = RealServerError(
                        "\(name) exited (\(exit)) before it listened on \(Self.describe(ports)): "
                            + process.commandLine,
                        serverOutput: output)
                    guard output.lowercased().contains("in use") else { throw error }
                    lastError = error
                    break
                }
                if await allAccept(ports) {
                    // nginx keeps retrying a taken port for seconds before it exits: whatever accepted
                    // there is not this server.
                    let output = logTails()
                    guard output.lowercased().contains("in use") else {
                        return RunningServer(folder: folder, process: process, ports: ports)
                    }
                    await process.stop()
                    lastError = RealServerError(
                        "\(name) could not bind \(Self.describe(ports)): " + process.commandLine,
                        serverOutput: output)
                    break
                }
                if ContinuousClock.now >= deadline {
                    await process.stop()
                    throw RealServerError(
                        "\(name) did not accept connections on \(Self.describe(ports)) within "
                            + "\(readinessTimeout): \(process.commandLine)",
                        serverOutput: logTails())
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        throw lastError ?? RealServerError("\(name) could not be started")
    }

    /// Whether every port accepts connections, in the server's namespace.
    private func allAccept(_ ports: [Int]) async -> Bool {
        for port in ports {
            let accepts =
                if let namespace { await namespace.accepts(port) } else { LoopbackPort.accepts(port) }
            if !accepts { return false }
        }
        return true
    }

    /// The tails of standard output, standard error and the log files, each under its name.
    func logTails() -> String {
        var parts: [String] = []
        for file in [standardOutput, standardError] + logFiles {
            let tail = ServerFolder.tail(of: file)
            if !tail.isEmpty { parts.append("\(file):\n\(tail)") }
        }
        return parts.joined(separator: "\n")
    }

    /// `path` when it is an executable file; else an error that says which package to install.
    static func executable(_ path: String, package: String) throws(RealServerError) -> String {
        try installed(path, package: package, mode: X_OK)
    }

    /// `path` when it is a file that can be read (`mode` `R_OK`) or run (`X_OK`); else an error that says
    /// which package to install.
    static func installed(_ path: String, package: String, mode: Int32 = R_OK) throws(RealServerError)
        -> String
    {
        guard access(path, mode) == 0 else {
            throw RealServerError(
                "\(path) is missing: install the Debian package \(package) (scripts/test-deps.sh does)")
        }
        return path
    }

    private static func describe(_ ports: [Int]) -> String {
        ports.map { "127.0.0.1:\($0)" }.joined(separator: " and ")
    }
}
