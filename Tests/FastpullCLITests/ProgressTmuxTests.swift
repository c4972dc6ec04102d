import FastpullFixtures
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Where tmux is, if it is installed.
private let tmuxPath: String? = ["/usr/bin/tmux", "/usr/local/bin/tmux", "/bin/tmux"].first {
    FileManager.default.isExecutableFile(atPath: $0)
}

/// The live progress display as a person sees it: `fastpull` runs in a detached tmux pane of 40 and
/// of 200 columns, and the pane's text is captured while the download runs and after it ends.
@Suite("Live progress under tmux", .enabled(if: tmuxPath != nil, "tmux is not installed"))
struct ProgressTmuxTests {

    /// Runs tmux with `arguments` on the private server `socket` and returns its stdout.
    /// Only `capture` reads the output: the server a `new-session` starts would hold a pipe open.
    static func tmux(_ socket: String, _ arguments: [String], capture: Bool = false) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tmuxPath!)
        process.arguments = ["-L", socket] + arguments
        let output = capture ? Pipe() : nil
        process.standardOutput = output ?? FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return "" }
        let data = output?.fileHandleForReading.readDataToEndOfFile() ?? Data()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// Starts the tmux server and its session with a clean signal mask and default signal actions.
    /// Foundation's `Process` starts children with most signals blocked, and a tmux server that
    /// inherits that mask never sees SIGCHLD: its pane never runs and the client never returns.
    static func startSession(_ socket: String, _ arguments: [String]) -> Int32 {
        let path = tmuxPath!
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([path, "-L", socket] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        guard posix_spawn(&pid, path, &actions, &attributes, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }

    /// Polls the pane (off the cooperative pool) until `done` holds for its lines or `seconds` pass.
    static func capture(_ socket: String, seconds: Double, until done: @escaping @Sendable ([String]) -> Bool)
        async -> [String]
    {
        await CLIRunner.offPool {
            let deadline = Date().addingTimeInterval(seconds)
            var lines: [String] = []
            repeat {
                lines = tmux(socket, ["capture-pane", "-p", "-t", "fp"], capture: true).components(
                    separatedBy: "\n")
                if done(lines) { break }
                Thread.sleep(forTimeInterval: 0.05)
            } while Date() < deadline
            return lines
        }
    }

    @Test(arguments: [40, 200])
    func theLiveLineFitsTheWindow(columns: Int) async throws {
        let server = try FixtureServer()
        let folder = try ScratchFolders.make("fastpull-tmux").path
        let socket = "fastpull-test-\(UUID().uuidString)"
        defer { _ = Self.tmux(socket, ["kill-server"]) }
        let url = server.url("/gen/\(12 << 20)?rate=500000").absoluteString
        let command =
            "cd '\(folder)' && LANG=C.UTF-8 NO_COLOR=1 '\(CLIRunner.fastpull.path)' -n 4 '\(url)' -o big.bin; "
            + "echo EXIT=$?; sleep 600"
        _ = await CLIRunner.offPool {
            Self.startSession(
                socket, ["new-session", "-d", "-s", "fp", "-x", "\(columns)", "-y", "10", command])
        }

        let live = await Self.capture(socket, seconds: 20) { lines in
            lines.contains { $0.contains("%") && $0.contains("ETA") }
                && lines.contains { $0.hasPrefix("[") && $0.contains("█") }
        }
        let liveText = live.joined(separator: "\n")
        print("tmux pane at \(columns) columns while downloading:\n\(liveText)")
        let status = try #require(live.first { $0.contains("%") }, "no progress line in:\n\(liveText)")
        let map = try #require(live.first { $0.hasPrefix("[") }, "no segment map in:\n\(liveText)")
        // The live block's lines (a note such as "saving to …" may wrap, as any message does).
        for line in [status, map] {
            #expect(line.count < columns, "a line wider than the window: \(line)")
        }
        #expect(map.hasSuffix("]"))
        #expect(map.count == columns - 1)
        #expect(map.dropFirst().dropLast().allSatisfy { "█▓▒░".contains($0) })
        #expect(status.contains("/"))
        if columns >= 100 {
            #expect(status.hasPrefix("big.bin"))
            #expect(status.contains("B/s") && status.contains("ETA") && status.contains("4 conn"))
        } else {
            #expect(status.contains("M/s") || status.contains("K/s"))
        }
        #expect(!liveText.contains("\u{1B}"))

        let finished = await Self.capture(socket, seconds: 60) { lines in
            lines.contains { $0.hasPrefix("EXIT=") }
        }
        let finishedText = finished.joined(separator: "\n")
        print("tmux pane at \(columns) columns after the download:\n\(finishedText)")
        #expect(finished.contains("EXIT=0"), "\(finishedText)")
        #expect(finishedText.contains("fastpull: saved"))
        // The live block is erased before the summary.
        #expect(!finished.contains { $0.hasPrefix("[") && $0.contains("█") })
        #expect(!finished.contains { $0.contains("ETA") })
    }

    /// On a terminal, a batch says a file's failure when it happens: the 404 shows in the pane while
    /// the slow file's live line still runs, and the tally names the file whose code is the exit code.
    @Test func aBatchTellsAFailureOnTheTerminalWhenItHappens() async throws {
        var slow = FixtureServer.Configuration()
        slow.totalRate = 400_000
        let slowServer = try FixtureServer(slow)
        let server = try FixtureServer()
        let folder = try ScratchFolders.make("fastpull-tmux-batch").path
        let list =
            slowServer.url("/gen/\(3 << 20)?seed=22").absoluteString + " slow.bin\n"
            + server.url("/gen/1?status=404").absoluteString + " missing.bin\n"
        try list.write(toFile: folder + "/order.txt", atomically: true, encoding: .utf8)
        let socket = "fastpull-test-\(UUID().uuidString)"
        defer { _ = Self.tmux(socket, ["kill-server"]) }
        let command =
            "cd '\(folder)' && LANG=C.UTF-8 NO_COLOR=1 '\(CLIRunner.fastpull.path)' -i order.txt -j 2; "
            + "echo EXIT=$?; sleep 600"
        _ = await CLIRunner.offPool {
            Self.startSession(socket, ["new-session", "-d", "-s", "fp", "-x", "120", "-y", "12", command])
        }
        // The failure is on the screen while the slow file is still being fetched.
        let during = await Self.capture(socket, seconds: 20) { lines in
            lines.contains { $0.contains("[2/2]") && $0.contains("404") }
        }
        let duringText = during.joined(separator: "\n")
        print("tmux pane while the batch runs:\n\(duringText)")
        #expect(during.contains { $0.contains("[2/2]") && $0.contains("404") }, "\(duringText)")
        #expect(!during.contains { $0.hasPrefix("EXIT=") }, "the batch had ended: \(duringText)")
        #expect(!FileManager.default.fileExists(atPath: folder + "/slow.bin"), "\(duringText)")

        let finished = await Self.capture(socket, seconds: 60) { lines in
            lines.contains { $0.hasPrefix("EXIT=") }
        }
        let finishedText = finished.joined(separator: "\n")
        print("tmux pane after the batch:\n\(finishedText)")
        #expect(finished.contains("EXIT=4"), "\(finishedText)")
        #expect(finishedText.contains("exit 4, the code of [2/2]"), "\(finishedText)")
        #expect(finishedText.components(separatedBy: "[2/2] error").count == 2, "said once: \(finishedText)")
        #expect(!finishedText.contains("\u{1B}"))
    }

    /// `--help` in a terminal of 64 columns wraps to it: no line is wider, and each option's help goes
    /// under its name. Before: always 100 columns.
    @Test func helpWrapsToTheTerminal() async throws {
        let socket = "fastpull-test-\(UUID().uuidString)"
        defer { _ = Self.tmux(socket, ["kill-server"]) }
        let command = "'\(CLIRunner.fastpull.path)' --help; echo EXIT=$?; sleep 600"
        _ = await CLIRunner.offPool {
            Self.startSession(socket, ["new-session", "-d", "-s", "fp", "-x", "64", "-y", "300", command])
        }
        let pane = await Self.capture(socket, seconds: 20) { lines in lines.contains { $0.hasPrefix("EXIT=") }
        }
        let text = pane.joined(separator: "\n")
        #expect(pane.contains("EXIT=0"), "\(text)")
        #expect(pane.allSatisfy { $0.count <= 64 }, "\(text)")
        let output = try #require(pane.firstIndex { $0.hasPrefix("  -o, --output PATH") }, "\(text)")
        #expect(pane[output] == "  -o, --output PATH")
        #expect(pane[output + 1].hasPrefix("      Write to PATH"))
    }
}
