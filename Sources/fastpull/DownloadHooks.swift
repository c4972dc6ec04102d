import Fastpull
import FastpullNet
import FoundationEssentials
import Glibc
import Synchronization

/// `--on-download-complete` and `--on-download-error` (aria2's names): a command run for each file
/// as its download ends, while the others go on.
///
/// The command gets aria2's three arguments — an id of 16 hexadecimal digits (the file's place in
/// the run, from 1), the number of files of that download (1), and the path — so an aria2 hook
/// script runs unchanged; and `FASTPULL_*` variables: `FASTPULL_PATH`, `FASTPULL_URL`,
/// `FASTPULL_INDEX` and `FASTPULL_COUNT` (the file's place and the run's number of files),
/// `FASTPULL_STATUS` (`downloaded`, `already-complete`, `kept` or `failed`), and for a file
/// saved `FASTPULL_SIZE`, `FASTPULL_BYTES_FETCHED` and `FASTPULL_SHA256` (where computed), for a
/// failure `FASTPULL_EXIT_CODE` and `FASTPULL_ERROR`.
///
/// A command that is one word (a program's name or path) runs as that program with the three
/// arguments; any other is a shell command (`/bin/sh -c`) with them as `$1`, `$2` and `$3`. Its
/// standard input is empty and its standard output goes to fastpull's standard error, so that
/// fastpull's own (`--json`, `-o -`) stays whole. A file stopped by a signal or `--max-time` runs
/// neither hook. The run waits for its hooks before it exits; a hook that fails is a warning, and
/// the exit code stays the files'.
struct DownloadHooks: Sendable {
    /// `--on-download-complete`.
    var complete: String?
    /// `--on-download-error`.
    var error: String?

    /// Whether any hook is set.
    var isEmpty: Bool { complete == nil && error == nil }

    /// What one hook is told of its file.
    struct Call: Sendable {
        var option: String
        var command: String
        var index: Int
        var count: Int
        var path: String
        var variables: [String: String]
    }

    /// The call `event`, an event of the file at `index` (of `count`) whose URL is `url`, asks for,
    /// if any: a `finished` event runs the complete hook, a `failed` one (not a stop) the error hook.
    func call(for event: Event, index: Int, count: Int, url: URL, plannedPath: String?) -> Call? {
        var variables = [
            "FASTPULL_URL": url.absoluteString, "FASTPULL_INDEX": "\(index + 1)",
            "FASTPULL_COUNT": "\(count)",
        ]
        switch event.detail {
        case .finished(let finished):
            guard let complete else { return nil }
            variables["FASTPULL_STATUS"] =
                finished.keptAsFound ? "kept" : finished.alreadyPresent ? "already-complete" : "downloaded"
            variables["FASTPULL_SIZE"] = "\(finished.size)"
            variables["FASTPULL_BYTES_FETCHED"] = "\(finished.bytesFetched)"
            if let sha256 = finished.digests["sha256"] ?? finished.recordedDigests["sha256"] {
                variables["FASTPULL_SHA256"] = sha256
            }
            variables["FASTPULL_PATH"] = finished.outputPath
            return Call(
                option: "--on-download-complete", command: complete, index: index, count: count,
                path: finished.outputPath, variables: variables)
        case .failed(let failure):
            guard let error, failure.code != .interrupted else { return nil }
            variables["FASTPULL_STATUS"] = "failed"
            variables["FASTPULL_EXIT_CODE"] = "\(failure.code.rawValue)"
            variables["FASTPULL_ERROR"] = failure.message
            variables["FASTPULL_PATH"] = plannedPath ?? ""
            return Call(
                option: "--on-download-error", command: error, index: index, count: count,
                path: plannedPath ?? "", variables: variables)
        default:
            return nil
        }
    }

    /// Characters of a command run as one program (anything else makes it a shell command).
    private static let wordCharacters = Set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._+-")

    /// The `/bin/sh` arguments that run `call`.
    static func shellArguments(for call: Call) -> [String] {
        let id = String(call.index + 1, radix: 16)
        let gid = String(repeating: "0", count: max(0, 16 - id.count)) + id
        let isWord = call.command.allSatisfy { wordCharacters.contains($0) }
        let script = isWord ? call.command + " \"$@\"" : call.command
        return ["/bin/sh", "-c", script, "fastpull", gid, "1", call.path]
    }

    /// Runs `call` and waits for it on a thread of its own; returns a warning when it could not
    /// start or did not exit 0.
    static func run(_ call: Call) async -> String? {
        let arguments = shellArguments(for: call)
        var environment = ProcessInfo.processInfo.environment
        for (name, value) in call.variables { environment[name] = value }
        let (pid, failure) = spawn(arguments, environment: environment)
        let subject = "\(call.option) for \(call.path.isEmpty ? "file \(call.index + 1)" : call.path)"
        guard failure == 0 else {
            return "warning: \(subject): cannot start /bin/sh: \(String(cString: strerror(failure)))"
        }
        let status = await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            OSThread.detach {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
                continuation.resume(returning: status)
            }
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Glibc's macros spell.
        let signal = status & 0x7f
        if signal != 0 { return "warning: \(subject): the command was killed by signal \(signal)" }
        let code = (status >> 8) & 0xff
        return code == 0 ? nil : "warning: \(subject): the command exited \(code)"
    }

    /// Starts `arguments` with `environment`: standard input empty, standard output to standard
    /// error, signals as a new program has them. Returns the child, or the error number.
    private static func spawn(_ arguments: [String], environment: [String: String]) -> (pid_t, Int32) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, 2, 1)
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
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        return (pid, status)
    }
}

/// The hooks a run started, awaited before it exits.
final class HookRuns: Sendable {
    private let tasks = Mutex<[Task<Void, Never>]>([])

    /// Starts `call`; its warning, if any, goes to `console`.
    func start(_ call: DownloadHooks.Call, console: Console) {
        let task = Task {
            if let warning = await DownloadHooks.run(call) { console.note(warning) }
        }
        tasks.withLock { $0.append(task) }
    }

    /// Waits for every hook started.
    func wait() async {
        for task in tasks.withLock({ $0 }) { await task.value }
    }
}
