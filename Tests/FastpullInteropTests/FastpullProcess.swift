import FastpullFixtures
import Foundation
import Synchronization

@testable import FastpullHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// The built `fastpull` binary run as a child, with its output read on threads of its own.
///
/// Every blocking call (reading the pipes, `waitUntilExit`) runs on a `Thread`, never on Swift's
/// cooperative pool (two threads here), so tests running in parallel never stall each other. The child
/// gets this process's environment without any proxy variable: a test reaches a proxy only through
/// `--proxy`.
final class FastpullProcess: Sendable {
    /// What a finished run printed and how it ended.
    struct Result: Sendable, CustomStringConvertible {
        var status: Int32
        var stdout: String
        var stderr: String

        /// The `--json` events, one per stdout line that is JSON.
        var events: [JSONEvent] { stdout.split(separator: "\n").compactMap { JSONEvent(line: String($0)) } }

        /// The events called `name`.
        func events(_ name: String) -> [JSONEvent] { events.filter { $0.name == name } }

        /// The last non-empty line of stderr: fastpull's one-line error.
        var errorLine: String {
            stderr.split(separator: "\n").last { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
                .map(String.init) ?? ""
        }

        /// "exit 5: fastpull: ... (stderr line)".
        var description: String { "exit \(status): \(errorLine)" }
    }

    private struct State {
        var stdout = Data()
        var stderr = Data()
        var result: Result?
        var waiters: [CheckedContinuation<Result, Never>] = []
    }

    /// The folder the package's executables are built into: `fastpull` sits next to the test bundle.
    static let binaryFolder: URL = {
        var candidate = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            if FileManager.default.isExecutableFile(atPath: candidate.appendingPathComponent("fastpull").path)
            {
                return candidate
            }
            candidate.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }()

    /// The built `fastpull`.
    static var binary: String { binaryFolder.appendingPathComponent("fastpull").path }

    /// Proxy variables the child never inherits.
    static let proxyVariables: Set<String> = [
        "http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
        "NO_PROXY",
    ]

    /// What the reading and waiting threads share with this object.
    private final class Shared: Sendable {
        let state = Mutex(State())
    }

    private let process: Process
    private let shared = Shared()
    /// The command line, for messages.
    let commandLine: String

    /// Starts `fastpull arguments` in `directory`; `onStdoutLine` sees each stdout line (a `--json`
    /// event) as it arrives, on the reading thread, with this process (to interrupt it at once: the
    /// reading thread never waits for Swift's pool, which other tests may keep busy).
    /// In `namespace`, it runs there (`ip netns exec`, which execs fastpull: the process is fastpull).
    /// `executable` runs instead of the built `fastpull` (a link to it named `aria2c`, or aria2c itself).
    init(
        executable: String? = nil, _ arguments: [String], in directory: String,
        namespace: NetworkNamespace? = nil,
        onStdoutLine: @escaping @Sendable (String, FastpullProcess) -> Void = { _, _ in }
    ) throws {
        let process = Process()
        let binary = executable ?? Self.binary
        let command = namespace?.command(binary, arguments) ?? (executable: binary, arguments: arguments)
        process.executableURL = URL(fileURLWithPath: command.executable)
        process.arguments = command.arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.environment = ProcessInfo.processInfo.environment.filter {
            !Self.proxyVariables.contains($0.key)
        }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        self.process = process
        commandLine = (["fastpull"] + arguments).joined(separator: " ")
        try process.run()

        let readers = DispatchGroup()
        let stdoutReader = Thread { [shared, self] in
            var pending = Data()
            let handle = out.fileHandleForReading
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                shared.state.withLock { $0.stdout.append(chunk) }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    onStdoutLine(line, self)
                    pending.removeSubrange(pending.startIndex...newline)
                }
            }
            readers.leave()
        }
        let stderrReader = Thread { [shared] in
            let handle = err.fileHandleForReading
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                shared.state.withLock { $0.stderr.append(chunk) }
            }
            readers.leave()
        }
        readers.enter()
        readers.enter()
        stdoutReader.start()
        stderrReader.start()
        Thread { [shared] in
            readers.wait()
            process.waitUntilExit()
            let waiters = shared.state.withLock { state -> [CheckedContinuation<Result, Never>] in
                let result = Result(
                    status: process.terminationStatus, stdout: String(decoding: state.stdout, as: UTF8.self),
                    stderr: String(decoding: state.stderr, as: UTF8.self))
                state.result = result
                defer { state.waiters = [] }
                return state.waiters
            }
            let result = shared.state.withLock { $0.result! }
            for waiter in waiters { waiter.resume(returning: result) }
        }.start()
    }

    /// Runs `fastpull arguments` in `directory` (and `namespace`) to the end.
    static func run(_ arguments: [String], in directory: String, namespace: NetworkNamespace? = nil)
        async throws -> Result
    {
        try await FastpullProcess(arguments, in: directory, namespace: namespace).finished()
    }

    /// True once the process has ended and its output has been read.
    var hasFinished: Bool { shared.state.withLock { $0.result != nil } }

    /// Sends SIGINT, as Ctrl-C does.
    func interrupt() {
        if shared.state.withLock({ $0.result == nil }) { process.interrupt() }
    }

    /// Sends SIGKILL, as a crash or the OOM killer would: nothing of the process runs after it.
    func kill() {
        if shared.state.withLock({ $0.result == nil }) { Glibc.kill(process.processIdentifier, SIGKILL) }
    }

    /// Waits (without holding a thread) for the run to end.
    func finished() async -> Result {
        await withCheckedContinuation { continuation in
            let done: Result? = shared.state.withLock { state in
                if let result = state.result { return result }
                state.waiters.append(continuation)
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }
}
