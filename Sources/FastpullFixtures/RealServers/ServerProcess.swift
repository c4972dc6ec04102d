import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A server started as a child process in a process group of its own, reaped on a thread of its own.
///
/// Standard input is `/dev/null`; standard output and error go to files. The child's environment is this
/// process's without any proxy variable (`http_proxy`, `HTTPS_PROXY`, `NO_PROXY`, ...), so a proxy set
/// for the test run never leaks into a server. ``stop(grace:)`` ends the whole group, and any descendant
/// that left the group (squid's helpers run in sessions of their own), by their process ids; if the
/// object is dropped while the child still runs, its group is killed.
final class ServerProcess: Sendable {
    /// How a child ended.
    struct Exit: Sendable, CustomStringConvertible {
        /// The raw status from `waitpid`.
        var status: Int32

        /// The exit code, when the child exited normally.
        var code: Int32? { status & 0x7F == 0 ? (status >> 8) & 0xFF : nil }

        /// "exit 1", "signal 9".
        var description: String {
            if let code { return "exit \(code)" }
            return "signal \(status & 0x7F)"
        }
    }

    private struct State {
        var exit: Exit?
        var waiters: [CheckedContinuation<Exit, Never>] = []
    }

    /// The state the reaper thread shares with this object; the thread holds only this, so dropping
    /// the object still reaches `deinit` while the child runs.
    private final class Shared: Sendable {
        let state = Mutex(State())
    }

    /// The child's process id, which is also its process group id.
    let pid: pid_t
    /// What the child was started as, for messages.
    let commandLine: String
    private let shared = Shared()

    /// Environment variables a child never inherits: it reaches every address directly.
    static let proxyVariables: Set<String> = [
        "http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy",
        "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY",
    ]

    /// Starts `executable` (a path, or a name looked up in `PATH`) with `arguments`. `environment` adds to
    /// (or replaces in) the inherited environment, after the proxy variables were removed.
    init(
        executable: String, arguments: [String], environment: [String: String] = [:],
        standardOutput: String, standardError: String
    ) throws(RealServerError) {
        var fileActions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&fileActions)
        defer { posix_spawn_file_actions_destroy(&fileActions) }
        posix_spawn_file_actions_addopen(&fileActions, 0, "/dev/null", O_RDONLY, 0)
        let outputFlags = O_WRONLY | O_CREAT | O_APPEND
        posix_spawn_file_actions_addopen(&fileActions, 1, standardOutput, outputFlags, 0o644)
        posix_spawn_file_actions_addopen(&fileActions, 2, standardError, outputFlags, 0o644)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Servers must not inherit the test runner's ignored signals or blocked mask, or SIGTERM may not
        // stop them.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGINT, SIGTERM, SIGPIPE, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2] {
            sigaddset(&defaults, number)
        }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))

        var merged = ProcessInfo.processInfo.environment.filter { !Self.proxyVariables.contains($0.key) }
        for (name, value) in environment { merged[name] = value }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child: pid_t = 0
        let status = posix_spawnp(&child, executable, &fileActions, &attributes, argv, envp)
        guard status == 0 else {
            throw RealServerError("cannot run \(executable): \(String(cString: strerror(status)))")
        }
        let pid = child
        self.pid = pid
        commandLine = ([executable] + arguments).joined(separator: " ")
        let shared = shared
        let thread = Thread {
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
            let exit = Exit(status: raw)
            let waiters = shared.state.withLock { state in
                state.exit = exit
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: exit) }
        }
        thread.name = "waitpid \(pid)"
        thread.start()
    }

    deinit {
        if exit == nil { kill(-pid, SIGKILL) }
    }

    /// How the child ended, or nil while it runs.
    var exit: Exit? { shared.state.withLock { $0.exit } }

    /// Waits (without holding a thread) until the child has ended.
    func exited() async -> Exit {
        await withCheckedContinuation { continuation in
            let done: Exit? = shared.state.withLock { state in
                if let exit = state.exit { return exit }
                state.waiters.append(continuation)
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }

    /// Waits up to `timeout` for the child to end; nil if it still runs.
    func exited(within timeout: Duration) async -> Exit? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let exit { return exit }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return exit
    }

    /// Sends `signal` to the child's process group while the child has not been reaped.
    func signalGroup(_ signal: Int32) {
        if exit == nil { kill(-pid, signal) }
    }

    /// Sends `signal` to the child alone.
    func signal(_ signal: Int32) {
        if exit == nil { kill(pid, signal) }
    }

    /// Stops the child: SIGTERM to its group, SIGKILL after `grace`, then SIGKILL to every descendant
    /// that is still alive (those that made a session of their own too). Returns once the child is
    /// reaped and its descendants are gone (bounded: a descendant that outlives 2 s more is left).
    func stop(grace: Duration = .seconds(5)) async {
        guard exit == nil else { return }
        let descendants = Self.descendants(of: pid)
        signalGroup(SIGTERM)
        if await exited(within: grace) == nil {
            signalGroup(SIGKILL)
            _ = await exited()
        }
        for descendant in descendants where Self.isAlive(descendant) { kill(descendant.pid, SIGKILL) }
        let deadline = ContinuousClock.now + .seconds(2)
        while descendants.contains(where: Self.isAlive), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Every process below `root` (from `/proc/<pid>/stat`), each with its start time, so a pid that
    /// the kernel hands to a new process later is never mistaken for it.
    static func descendants(of root: pid_t) -> [(pid: pid_t, started: Substring)] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var children: [pid_t: [(pid: pid_t, started: Substring)]] = [:]
        for entry in entries {
            // After the command name: state, ppid, ... and the start time is the 20th field.
            guard let pid = pid_t(entry), let fields = statFields(of: pid), fields.count > 19,
                let parent = pid_t(fields[1])
            else { continue }
            children[parent, default: []].append((pid, fields[19]))
        }
        var found: [(pid: pid_t, started: Substring)] = []
        var queue = [root]
        while let next = queue.popLast() {
            let below = children[next] ?? []
            found += below
            queue += below.map(\.pid)
        }
        return found
    }

    /// True while the process exists, is the same one (same start time) and is not a zombie.
    static func isAlive(_ process: (pid: pid_t, started: Substring)) -> Bool {
        guard let fields = statFields(of: process.pid), fields.count > 19 else { return false }
        return fields[0] != "Z" && fields[19] == process.started
    }

    /// The fields of `/proc/<pid>/stat` after the command name: state, ppid, pgrp, ...
    private static func statFields(of pid: pid_t) -> [Substring]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }
}
