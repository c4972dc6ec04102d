import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One command to run: an executable (path or `PATH` name), its arguments and extra environment.
struct Invocation: Sendable {
    var executable: String
    var arguments: [String]
    var environment: [String: String] = [:]

    /// The command as a shell-like line, for logs and the report.
    var commandLine: String {
        ([executable] + arguments).map { $0.contains(" ") ? "'\($0)'" : $0 }.joined(separator: " ")
    }
}

/// What one measured run of one or more invocations (run one after another) produced.
struct RunOutcome: Sendable {
    /// Sum of the invocations' wall times.
    var wallSeconds: Double = 0
    var userSeconds: Double = 0
    var systemSeconds: Double = 0
    /// The largest peak RSS of any invocation.
    var peakRSSKiB = 0
    /// The last invocation's status ("exit 0", "signal 9"), or "timeout".
    var status = "exit 0"
    var succeeded = true
    var timedOut = false
    /// True when `interruptWhen` fired and the run was sent SIGINT.
    var interrupted = false
    /// The end of the failing invocation's standard error, when one failed.
    var errorTail: String?
    /// How many invocations ran.
    var invocations = 0
}

/// Runs tools as children and measures them: wall and CPU time from `wait4`, peak RSS from
/// `/usr/bin/time -f %M` (the tool runs as its child; see ``ChildProcess`` for why `wait4`'s own
/// `ru_maxrss` would overstate it). Without `/usr/bin/time`, peak RSS is `wait4`'s, an upper bound.
struct Runner {
    /// Where each child's standard output and error go (overwritten by every run).
    var logDirectory: String
    /// GNU time, when installed.
    var timeProgram = findExecutable("/usr/bin/time")

    /// Runs `invocations` in order, stopping at the first failure, within `timeout` seconds in total.
    /// When `interruptWhen` returns true (polled every 2 ms) the running child gets SIGINT once, and
    /// SIGKILL if it is still running 15 s later.
    func run(
        _ invocations: [Invocation], timeout: Double, interruptWhen: (() -> Bool)? = nil
    ) -> RunOutcome {
        var outcome = RunOutcome()
        let standardOutput = logDirectory + "/stdout.log"
        let standardError = logDirectory + "/stderr.log"
        let timeOutput = logDirectory + "/time.txt"
        for invocation in invocations {
            outcome.invocations += 1
            let child: ChildProcess
            var executable = invocation.executable
            var arguments = invocation.arguments
            if let timeProgram {
                unlink(timeOutput)
                arguments = ["-f", "%M", "-o", timeOutput, "--", executable] + arguments
                executable = timeProgram
            }
            do {
                child = try ChildProcess(
                    executable: executable, arguments: arguments,
                    environment: invocation.environment, standardOutput: standardOutput,
                    standardError: standardError)
            } catch {
                outcome.succeeded = false
                outcome.status = "not started"
                outcome.errorTail = error.description
                return outcome
            }
            let budget = timeout - outcome.wallSeconds
            var interruptedAt: Double?
            var exit: ChildExit?
            while exit == nil {
                exit = child.wait(seconds: interruptWhen == nil ? 0.05 : 0.002)
                guard exit == nil else { break }
                let elapsed = child.elapsed
                if elapsed > budget {
                    child.send(SIGKILL)
                    outcome.timedOut = true
                } else if let interruptWhen, interruptedAt == nil, interruptWhen() {
                    child.send(SIGINT)
                    interruptedAt = elapsed
                    outcome.interrupted = true
                } else if let interruptedAt, elapsed - interruptedAt > 15 {
                    child.send(SIGKILL)
                }
            }
            guard var exit else { break }
            if timeProgram != nil { Self.applyTimeReport(timeOutput, to: &exit) }
            outcome.wallSeconds += exit.wallSeconds
            outcome.userSeconds += exit.userSeconds
            outcome.systemSeconds += exit.systemSeconds
            outcome.peakRSSKiB = max(outcome.peakRSSKiB, exit.peakRSSKiB)
            outcome.status = outcome.timedOut ? "timeout after \(Int(timeout)) s" : exit.statusText
            guard exit.succeeded, !outcome.timedOut else {
                outcome.succeeded = false
                outcome.errorTail = Self.tail(of: standardError)
                return outcome
            }
        }
        return outcome
    }

    /// Takes the peak RSS and the real way the tool ended from GNU time's report: its last line is
    /// `%M`; a line "Command terminated by signal N" comes before it when a signal ended the tool (time
    /// itself then exits with 128 + N).
    private static func applyTimeReport(_ path: String, to exit: inout ChildExit) {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return }
        let lines = text.split(separator: "\n")
        if let last = lines.last, let kibibytes = Int(last.trimmingCharacters(in: .whitespaces)) {
            exit.peakRSSKiB = kibibytes
        }
        let marker = "Command terminated by signal "
        if let line = lines.first(where: { $0.hasPrefix(marker) }),
            let number = Int32(line.dropFirst(marker.count))
        {
            exit.signal = number
            exit.exitCode = nil
        }
    }

    /// The last line or so of a log file.
    static func tail(of path: String, limit: Int = 240) -> String? {
        guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else { return nil }
        let text = String(decoding: data.suffix(4096), as: UTF8.self)
        let lines = text.split(whereSeparator: \.isNewline).filter {
            !$0.trimmingCharacters(in: .whitespaces).isEmpty
        }
        guard let last = lines.last else { return nil }
        return String(last.suffix(limit))
    }
}
