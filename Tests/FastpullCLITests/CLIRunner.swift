import Foundation

/// Runs the built `fastpull` binary and captures what it printed.
struct CLIRunner {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String

        /// The counts of the `connections` events a `--json` run printed, in order.
        var connectionCounts: [Int] {
            stdout.split(separator: "\n").compactMap { line -> Int? in
                guard line.contains("\"event\":\"connections\""),
                    let range = line.range(of: "\"connections\":")
                else { return nil }
                return Int(line[range.upperBound...].prefix { $0.isNumber })
            }
        }
    }

    /// The folder the test bundle and the package's executables are built into.
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

    static var fastpull: URL { binaryFolder.appendingPathComponent("fastpull") }

    /// Starts `fastpull` (or `executable`, a link to it under another name) with `arguments` in
    /// `directory`; the caller waits or signals it. `environment` adds to (or, with an empty value,
    /// clears from) the test's own; `input` is what the child reads on stdin (nothing when nil).
    static func start(
        _ arguments: [String], in directory: String, environment: [String: String] = [:], input: Data? = nil,
        executable: URL = fastpull
    ) throws -> (Process, Pipe, Pipe) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        if !environment.isEmpty {
            var merged = ProcessInfo.processInfo.environment
            for (name, value) in environment {
                merged[name] = value.isEmpty ? nil : value
            }
            process.environment = merged
        }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let stdin = input.map { _ in Pipe() }
        process.standardInput = stdin ?? FileHandle.nullDevice
        try process.run()
        if let stdin, let input {
            // Small inputs only: they fit the pipe's buffer, so this never blocks.
            stdin.fileHandleForWriting.write(input)
            try? stdin.fileHandleForWriting.close()
        }
        return (process, out, err)
    }

    /// Runs `fastpull` to completion, waiting on a thread of its own: a test must never block Swift's
    /// cooperative pool (two threads here), or every other test's downloads stall with it.
    static func run(
        _ arguments: [String], in directory: String, environment: [String: String] = [:], input: Data? = nil
    ) async throws -> Result {
        let (process, out, err) = try start(arguments, in: directory, environment: environment, input: input)
        return await finish(process, out, err)
    }

    /// Runs `command` with `/bin/sh -c` in `directory` (for limits such as `ulimit -n`), waiting on a
    /// thread of its own.
    static func shell(_ command: String, in directory: String) async throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return await finish(process, out, err)
    }

    /// Waits for a started `fastpull` on a thread of its own and collects its output.
    static func finish(_ process: Process, _ out: Pipe, _ err: Pipe) async -> Result {
        await offPool { finishBlocking(process, out, err) }
    }

    /// Runs blocking `work` on a new thread and returns its result without holding a pool thread.
    static func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: work()) }.start()
        }
    }

    static func finishBlocking(_ process: Process, _ out: Pipe, _ err: Pipe) -> Result {
        // Read both pipes before waiting so a chatty child never blocks on a full pipe.
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }
}
