import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What the kernel reported about one finished child: how it ended, its wall time and its own resource
/// usage (from `wait4`, so CPU time and peak RSS belong to this child alone, not to earlier ones).
struct ChildExit: Sendable {
    /// The exit code, when the child exited normally.
    var exitCode: Int32?
    /// The signal that ended the child, when one did.
    var signal: Int32?
    /// Seconds from just before `posix_spawn` to just after `wait4` returned.
    var wallSeconds: Double
    /// User CPU seconds of the child (and of any grandchildren it waited for).
    var userSeconds: Double
    /// System CPU seconds of the child.
    var systemSeconds: Double
    /// Peak resident set size of the child, in KiB (`ru_maxrss`).
    var peakRSSKiB: Int

    /// True when the child exited with status 0.
    var succeeded: Bool { exitCode == 0 }

    /// "exit 3", "signal 9" and so on.
    var statusText: String {
        if let exitCode { return "exit \(exitCode)" }
        if let signal { return "signal \(signal)" }
        return "unknown"
    }
}

/// Why a child could not be started.
struct SpawnError: Error, CustomStringConvertible {
    var executable: String
    var errorNumber: Int32

    var description: String { "cannot run \(executable): \(String(cString: strerror(errorNumber)))" }
}

/// A child process started with `posix_spawn` in a process group of its own, and reaped with `wait4` on
/// a thread of its own.
///
/// Foundation's `Process` reaps its children itself, which hides their `rusage`; and the
/// `RUSAGE_CHILDREN` totals keep only the largest `ru_maxrss` ever seen, which is no use for a per-run
/// peak. Spawning directly and calling `wait4` gives exact per-child wall and CPU time. (Its `ru_maxrss`
/// is not the child's own: Linux folds the spawning process's high-water RSS into it at `exec`, so the
/// ``Runner`` takes peak RSS from `/usr/bin/time`, a small intermediate process.)
final class ChildProcess: Sendable {
    /// The process id.
    let pid: pid_t
    private let started: UInt64
    private let result = Mutex<ChildExit?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts `executable` (a path, or a name looked up in `PATH`) with `arguments`. Standard input is
    /// `/dev/null`; standard output and error go to the given files (created or truncated), or to
    /// `/dev/null`. `environment` entries are added to (or replace those of) this process's environment.
    init(
        executable: String, arguments: [String], environment: [String: String] = [:],
        standardOutput: String? = nil, standardError: String? = nil
    ) throws(SpawnError) {
        var fileActions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&fileActions)
        defer { posix_spawn_file_actions_destroy(&fileActions) }
        posix_spawn_file_actions_addopen(&fileActions, 0, "/dev/null", O_RDONLY, 0)
        let outputFlags = O_WRONLY | O_CREAT | O_TRUNC
        posix_spawn_file_actions_addopen(&fileActions, 1, standardOutput ?? "/dev/null", outputFlags, 0o644)
        posix_spawn_file_actions_addopen(&fileActions, 2, standardError ?? "/dev/null", outputFlags, 0o644)

        // Children must not inherit ignored signals or a blocked mask from this process.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGINT, SIGTERM, SIGPIPE, SIGHUP, SIGQUIT] { sigaddset(&defaults, number) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        // A process group of its own: signals reach the child and anything it spawns, and the terminal's
        // Ctrl-C goes to the harness, which cleans up.
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))

        var merged = ProcessInfo.processInfo.environment
        for (name, value) in environment { merged[name] = value }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }

        var pid: pid_t = 0
        let start = DispatchTime.now().uptimeNanoseconds
        let status = posix_spawnp(&pid, executable, &fileActions, &attributes, argv, envp)
        guard status == 0 else { throw SpawnError(executable: executable, errorNumber: status) }
        self.pid = pid
        self.started = start
        Cleanup.register(child: pid)
        let thread = Thread { [self] in self.reap() }
        thread.name = "wait4 \(pid)"
        thread.start()
    }

    private func reap() {
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let end = DispatchTime.now().uptimeNanoseconds
        let exited = status & 0x7F == 0
        let exit = ChildExit(
            exitCode: exited ? (status >> 8) & 0xFF : nil,
            signal: exited ? nil : status & 0x7F,
            wallSeconds: Double(end - started) / 1e9,
            userSeconds: Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6,
            systemSeconds: Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6,
            peakRSSKiB: Int(usage.ru_maxrss))
        Cleanup.unregister(child: pid)
        result.withLock { $0 = exit }
        finished.signal()
    }

    /// Sends `signal` to the child's process group unless the child has already been reaped.
    func send(_ signal: Int32) {
        let done = result.withLock { $0 != nil }
        if !done { kill(-pid, signal) }
    }

    /// Seconds since the child was started.
    var elapsed: Double { Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 }

    /// Waits up to `seconds` for the child to end; returns its exit once it has.
    func wait(seconds: Double) -> ChildExit? {
        if finished.wait(timeout: .now() + seconds) == .success {
            finished.signal()  // keep the semaphore open for later waiters
            return result.withLock { $0 }
        }
        return nil
    }

    /// Waits for the child to end.
    func wait() -> ChildExit {
        finished.wait()
        finished.signal()
        return result.withLock { $0! }
    }
}

/// Runs a short helper command (e.g. `git rev-parse`, `aria2c --version`) and returns its standard
/// output (standard error too when `mergeErrors`), or nil when it cannot be run or fails.
func captureOutput(_ executable: String, _ arguments: [String], mergeErrors: Bool = false) -> String? {
    let file = "/tmp/fastpull-bench-capture-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    let errors = file + ".err"
    defer {
        unlink(file)
        unlink(errors)
    }
    guard
        let child = try? ChildProcess(
            executable: executable, arguments: arguments, standardOutput: file, standardError: errors)
    else { return nil }
    guard let exit = child.wait(seconds: 30) else {
        child.send(SIGKILL)
        _ = child.wait()
        return nil
    }
    guard exit.succeeded, let data = FileManager.default.contents(atPath: file) else { return nil }
    var text = String(decoding: data, as: UTF8.self)
    if mergeErrors, let more = FileManager.default.contents(atPath: errors) {
        text += String(decoding: more, as: UTF8.self)
    }
    return text
}

/// Finds `name` in `PATH` (or checks it directly when it contains a slash).
func findExecutable(_ name: String) -> String? {
    if name.contains("/") { return access(name, X_OK) == 0 ? name : nil }
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for directory in path.split(separator: ":") {
        let candidate = "\(directory)/\(name)"
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
}
