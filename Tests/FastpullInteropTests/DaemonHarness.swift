import FastpullFixtures
import Foundation
import Synchronization
import Testing

/// `fastpull daemon` started for a test, and Python scripts run against it (aria2p, selenium).
enum DaemonHarness {
    /// Starts `fastpull daemon` on a free port with its list in `folder` and `arguments` added; returns
    /// the process and the port it said it listens on.
    /// In `namespace`, it runs there.
    static func start(in folder: String, _ arguments: [String] = [], namespace: NetworkNamespace? = nil)
        async throws -> (FastpullProcess, Int)
    {
        let port = Mutex<Int?>(nil)
        let daemon = try FastpullProcess(
            ["daemon", "--rpc-listen-port", "0", "--list", folder + "/list.sqlite", "--dir", folder]
                + arguments,
            in: folder, namespace: namespace
        ) { line, _ in
            let found = line.components(separatedBy: "127.0.0.1:").dropFirst().first.flatMap {
                Int($0.prefix { $0.isNumber })
            }
            if let found { port.withLock { $0 = found } }
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while port.withLock({ $0 }) == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        return (daemon, try #require(port.withLock { $0 }, "the daemon never said its port"))
    }

    /// Runs `python3 -c script` off the cooperative pool; returns its status, stdout and stderr.
    static func python(_ script: String, arguments: [String] = [], namespace: NetworkNamespace? = nil)
        async throws -> (status: Int32, stdout: String, stderr: String)
    {
        try await OffPool.run { () throws -> (Int32, String, String) in
            let python = Process()
            let command =
                namespace?.command("/usr/bin/env", ["python3", "-c", script] + arguments)
                ?? (executable: "/usr/bin/env", arguments: ["python3", "-c", script] + arguments)
            python.executableURL = URL(fileURLWithPath: command.executable)
            python.arguments = command.arguments
            let out = Pipe()
            let err = Pipe()
            python.standardOutput = out
            python.standardError = err
            try python.run()
            let stdout = out.fileHandleForReading.readDataToEndOfFile()
            let stderr = err.fileHandleForReading.readDataToEndOfFile()
            python.waitUntilExit()
            return (
                python.terminationStatus, String(decoding: stdout, as: UTF8.self),
                String(decoding: stderr, as: UTF8.self)
            )
        }
    }

    /// Python for aria2p scripts: `wait(download)` polls until the download ends (complete, error or
    /// removed) or a minute passes, and returns its status.
    static let aria2pWait = """
        def wait(download):
            for _ in range(1200):
                download.update()
                if download.status in ("complete", "error", "removed"):
                    return download.status
                time.sleep(0.05)
            return download.status
        """

    /// Runs `script`, which prints one JSON object, then stops `daemon` (Ctrl-C); returns the object
    /// and how the daemon ended. The script failing is recorded as an issue with what it printed.
    static func runThenStop(_ script: String, _ daemon: FastpullProcess) async throws
        -> (seen: [String: Any], ended: FastpullProcess.Result)
    {
        let result = try await python(script)
        daemon.interrupt()
        let ended = await daemon.finished()
        #expect(result.status == 0, "python: \(result.stderr)")
        let seen = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] ?? [:]
        return (seen, ended)
    }
}
