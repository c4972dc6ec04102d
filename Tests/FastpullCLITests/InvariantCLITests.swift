import FastpullFixtures
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The integrity invariants end to end, with the built binary: one writer per output across
/// processes and within a batch, signals and closed pipes, a kill before the first durable save, a
/// process short of file descriptors, names and absurd sizes. Each reproduces a finding against the
/// first release (a wrong file with exit 0, a lost `.part`, a crash).
@Suite("fastpull keeps its invariants", .timeLimit(.minutes(5)))
struct InvariantCLITests {
    let server: FixtureServer
    let folder: String

    init() throws {
        server = try FixtureServer()
        folder = try ScratchFolders.make("fastpull-inv").path
    }

    func contents(_ name: String) -> Data? { FileManager.default.contents(atPath: folder + "/" + name) }
    var listing: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted() }

    /// Waits, off the pool, until `condition` holds (at most 20 s); returns whether it did.
    func wait(_ condition: @escaping @Sendable () -> Bool) async -> Bool {
        await CLIRunner.offPool {
            let deadline = Date().addingTimeInterval(20)
            while !condition(), Date() < deadline { usleep(2000) }
            return condition()
        }
    }

    // MARK: - One writer

    /// A second process with the same `-o` (another URL) while the first runs. Before: it unlinked the
    /// first one's `.part`, and the first renamed the second's bytes into place with exit 0. Now the
    /// second fails at once with exit 7 naming the process that writes there; the first is unharmed.
    @Test func aSecondProcessWithTheSameOutputFailsAtOnce() async throws {
        let size = 8 << 20
        // 500 kB/s per connection: the first run lasts about 8 s, far longer than the second needs.
        let slow = server.url("/gen/\(size)?seed=2&rate=500000").absoluteString
        let (first, out, err) = try CLIRunner.start(["-q", "-n", "2", slow, "-o", "same.bin"], in: folder)
        let part = folder + "/same.bin.part.fastpull"
        #expect(await wait { FileManager.default.fileExists(atPath: part) })
        let second = try await CLIRunner.run(
            ["-q", server.url("/gen/\(size)?seed=5").absoluteString, "-o", "same.bin", "--force"], in: folder)
        // It failed while the first still ran: it did not wait for the first to finish.
        #expect(first.isRunning, "the second writer did not fail until the first had finished")
        #expect(second.status == 7, "\(second.stderr)")
        #expect(second.stderr.contains("same.bin.part"), "\(second.stderr)")
        #expect(second.stderr.contains("process \(first.processIdentifier)"), "\(second.stderr)")
        let done = await CLIRunner.finish(first, out, err)
        #expect(done.status == 0, "\(done.stderr)")
        #expect(contents("same.bin") == Data(FixtureContent.bytes(count: size, seed: 2)))
        #expect(listing == ["same.bin"])
    }

    /// Two lines of one input file whose names derive to the same file, and a repeated line. Before:
    /// they overwrote each other ('rename …: No such file or directory', orphan journals). Now the later
    /// ones fail before a byte is written, naming the item that has the output; the first is saved.
    @Test func batchItemsWithOneOutputCollideBeforeAnythingIsWritten() async throws {
        let first = server.url("/gen/\(1 << 20)?seed=1").absoluteString
        let sameName = server.url("/gen/\(1 << 20)?seed=2").absoluteString
        let list = "\(first)\n\(sameName)\n\(first)\n"
        let result = try await CLIRunner.run(["-j", "3", "-i", "-"], in: folder, input: Data(list.utf8))
        #expect(result.status == 7, "\(result.stderr)")
        #expect(result.stderr.contains("also the output of item 1"), "\(result.stderr)")
        #expect(result.stderr.contains("3 files: 1 saved, 2 failed"), "\(result.stderr)")
        #expect(contents("1048576") == Data(FixtureContent.bytes(count: 1 << 20, seed: 1)))
        #expect(listing == ["1048576"])
    }

    /// Two URLs with other paths whose servers name the file alike (`Content-Disposition`). Before:
    /// they wrote one file. Now the later item fails before a byte is written, naming the item that
    /// has the name; the first is saved.
    @Test func batchItemsNamedAlikeByTheServerCollide() async throws {
        let disposition = "disposition=attachment%3B%20filename%3D%22release.tar%22"
        let first = server.url("/gen/\(1 << 20)?seed=1&\(disposition)").absoluteString
        // Another path, so another name but for the server's.
        let second = server.url("/gen/\((1 << 20) + 1)?seed=2&\(disposition)").absoluteString
        let result = try await CLIRunner.run(
            ["-j", "2", "-i", "-"], in: folder, input: Data("\(first)\n\(second)\n".utf8))
        #expect(result.status == 7, "\(result.stderr)")
        #expect(result.stderr.contains("also the output of item 1"), "\(result.stderr)")
        #expect(result.stderr.contains("2 files: 1 saved, 1 failed"), "\(result.stderr)")
        #expect(contents("release.tar") == Data(FixtureContent.bytes(count: 1 << 20, seed: 1)))
        #expect(listing == ["release.tar"])
    }

    // MARK: - Outputs that are not files

    /// `-o /dev/null`, as people time a link with curl, with and without `--force`. Before: with
    /// --force, as root, /dev/null itself was replaced by a regular file. Now the bytes are discarded
    /// (checked by their digest), the device stays, and nothing is created beside it.
    @Test(arguments: [false, true])
    func theNullDeviceDiscardsTheBytes(force: Bool) async throws {
        let size = 3 << 20
        let url = server.url("/gen/\(size)?seed=7").absoluteString
        let result = try await CLIRunner.run(
            ["--json", "--sha256", url, "-o", "/dev/null"] + (force ? ["--force"] : []), in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let digest = SHA256Digest.of(Data(FixtureContent.bytes(count: size, seed: 7))).map {
            String(format: "%02x", $0)
        }.joined()
        #expect(result.stdout.contains("\"sha256\":\"\(digest)\""), "\(result.stdout)")
        var info = stat()
        #expect(lstat("/dev/null", &info) == 0 && (info.st_mode & S_IFMT) == S_IFCHR)
        let beside = ((try? FileManager.default.contentsOfDirectory(atPath: "/dev")) ?? []).filter {
            $0.hasPrefix("null.")
        }
        #expect(beside.isEmpty, "\(beside)")
        #expect(listing.isEmpty, "\(listing)")
    }

    /// A FIFO at the output: its reader gets the file's bytes in order, from several connections, and
    /// the FIFO stays a FIFO, with nothing created beside it.
    @Test func aFIFOIsWrittenInOrder() async throws {
        let size = 6 << 20
        let path = folder + "/stream"
        #expect(mkfifo(path, 0o600) == 0)
        let url = server.url("/gen/\(size)?seed=8").absoluteString
        let reader = Task.detached {
            await CLIRunner.offPool { FileHandle(forReadingAtPath: path)?.readDataToEndOfFile() }
        }
        let result = try await CLIRunner.run(["-q", "-n", "4", url, "-o", "stream"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let read = await reader.value
        #expect(read == Data(FixtureContent.bytes(count: size, seed: 8)), "read \(read?.count ?? -1) bytes")
        var info = stat()
        #expect(lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFIFO)
        #expect(listing == ["stream"])
    }

    // MARK: - Signals and pipes

    /// SIGHUP (a closed terminal) and SIGTERM (`kill`, a service manager, a CI job's timeout).
    /// Before: exit 129 with no message and no final save. Now each stops like Ctrl-C: the journal is
    /// saved, exit 130, and the same command resumes.
    @Test(arguments: [SIGHUP, SIGTERM])
    func aHangupOrTerminationSavesAndExitsLikeAnInterrupt(signal: Int32) async throws {
        let size = 8 << 20
        // 300 kB/s a connection: the first run, on two, lasts about 14 s, far longer than the wait for
        // its first megabyte on a loaded machine; the resumed one, on eight, a few seconds.
        let url = server.url("/gen/\(size)?seed=4&rate=300000").absoluteString
        let name = "signal-\(signal).bin"
        let arguments = [url, "-o", name]
        let (process, out, err) = try CLIRunner.start(["-n", "2"] + arguments, in: folder)
        let server = server
        let pid = process.processIdentifier
        // Sent from the thread that sees the first megabyte arrive (a test task resumed on a busy pool
        // can come back late).
        let signalled = await CLIRunner.offPool { () -> Bool in
            let deadline = Date().addingTimeInterval(20)
            while server.stats.bodyBytesSent <= 1 << 20, Date() < deadline { usleep(1000) }
            return server.stats.bodyBytesSent > 1 << 20 && kill(pid, signal) == 0
        }
        #expect(signalled, "no signal sent")
        let result = await CLIRunner.finish(process, out, err)
        #expect(result.status == 130, "\(result.stderr)")
        #expect(result.stderr.contains("run the same command to resume"), "\(result.stderr)")
        // A stop the user chose is no error, and it counts in sizes, not raw bytes.
        #expect(result.stderr.contains("fastpull: stopped with "), "\(result.stderr)")
        #expect(!result.stderr.contains("error:"), "\(result.stderr)")
        #expect(result.stderr.contains("MiB of 8.0 MiB saved in"), "\(result.stderr)")
        #expect(listing.contains("\(name).part.fastpull"), "\(listing)")
        let resumed = try await CLIRunner.run(["--json", "-n", "8"] + arguments, in: folder)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stdout.contains("\"event\":\"resumed\""), "\(resumed.stdout)")
        #expect(contents(name) == Data(FixtureContent.bytes(count: size, seed: 4)))
    }

    /// Stderr into a pipe whose reader is gone (`2>&1 | head -c1`). Before: SIGPIPE killed the process
    /// at its first line after the reader left. Now the display stops and the download goes on.
    @Test func aClosedStderrNeverKillsTheDownload() async throws {
        let size = 4 << 20
        let url = server.url("/gen/\(size)?seed=6").absoluteString
        let process = Process()
        process.executableURL = CLIRunner.fastpull
        process.arguments = [url, "-o", "pipe.bin"]
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        try err.fileHandleForReading.close()
        await CLIRunner.offPool { process.waitUntilExit() }
        #expect(process.terminationReason == .exit, "killed by signal \(process.terminationStatus)")
        #expect(process.terminationStatus == 0)
        #expect(contents("pipe.bin") == Data(FixtureContent.bytes(count: size, seed: 6)))
    }

    /// `--json` into a pipe whose reader is gone (`--json | head -c1`). Before: killed at once, leaving a
    /// preallocated `.part` without a journal. Now it stops after a save (exit 130) and says why; what
    /// is left is resumable, or nothing.
    ///
    /// The reader closes just after the start, so the first events may still fit the pipe: two
    /// connections at 250 kB/s keep the download going for 16 s, far past the next event's write.
    @Test func aClosedStdoutUnderJSONStopsAfterASave() async throws {
        let url = server.url("/gen/\(8 << 20)?rate=250000").absoluteString
        let process = Process()
        process.executableURL = CLIRunner.fastpull
        process.arguments = ["--json", "-n", "2", url, "-o", "json.bin"]
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        try out.fileHandleForReading.close()
        let stderr = await CLIRunner.offPool {
            let data = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
        #expect(process.terminationReason == .exit, "killed by signal \(process.terminationStatus)")
        #expect(process.terminationStatus == 130, "\(stderr)")
        #expect(stderr.contains("standard output was closed"), "\(stderr)")
        let left = listing
        #expect(left.isEmpty || left.contains("json.bin.part.fastpull"), "\(left)")
        #expect(!left.contains("json.bin"))
    }

    // MARK: - The live journal

    /// `kill -9` before the first durable save (the durable journal is written every second). Before:
    /// the live journal was ignored once the segments had changed (they do at the first window), so the
    /// resume kept nothing. Now it counts from the first moment.
    @Test func aKillBeforeTheFirstDurableSaveKeepsTheLiveProgress() async throws {
        let size = 64 << 20
        let url = server.url("/gen/\(size)?seed=8&rate=10000000").absoluteString
        let arguments = ["-q", "-n", "4", url, "-o", "live.bin"]
        let (process, out, err) = try CLIRunner.start(arguments, in: folder)
        let live = folder + "/live.bin.part.fastpull-live"
        let durable = folder + "/live.bin.part.fastpull"
        let seen = await CLIRunner.offPool { () -> (live: Int64, durable: Int64, sameTiling: Bool) in
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                // By 10 MiB, windows have joined pieces: the live journal's segments differ from the
                // durable one's (which the first release took as a reason to ignore it).
                if let written = Self.writtenBytes(live), written >= 10 << 20 {
                    kill(process.processIdentifier, SIGKILL)
                    let sameTiling = Self.segmentStarts(live) == Self.segmentStarts(durable)
                    return (written, Self.writtenBytes(durable) ?? 0, sameTiling)
                }
                usleep(1000)
            }
            kill(process.processIdentifier, SIGKILL)
            return (0, 0, true)
        }
        _ = await CLIRunner.finish(process, out, err)
        #expect(seen.live >= 10 << 20, "the live journal never recorded 10 MiB")
        try #require(seen.durable < seen.live, "killed after a durable save; nothing to test")
        try #require(!seen.sameTiling, "the segments had not changed yet; nothing to test")
        let resumed = try await CLIRunner.run(["--json", "-n", "4", url, "-o", "live.bin"], in: folder)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let kept = resumed.stdout.split(separator: "\n").compactMap { line -> Int64? in
            guard line.contains("\"event\":\"resumed\"") else { return nil }
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return (object?["keptBytes"] as? NSNumber)?.int64Value
        }.first
        #expect((kept ?? 0) >= seen.live, "kept \(kept ?? 0) of the \(seen.live) the live journal had")
        #expect(contents("live.bin") == Data(FixtureContent.bytes(count: size, seed: 8)))
    }

    /// Where the segments of a journal file start, or nil when it cannot be read.
    static func segmentStarts(_ path: String) -> [Int64]? {
        guard let data = FileManager.default.contents(atPath: path),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let segments = object["segments"] as? [[String: Any]]
        else { return nil }
        return segments.map { (($0["start"] as? NSNumber)?.int64Value) ?? -1 }
    }

    /// The bytes a journal file records as written, or nil when it cannot be read.
    static func writtenBytes(_ path: String) -> Int64? {
        guard let data = FileManager.default.contents(atPath: path),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let segments = object["segments"] as? [[String: Any]]
        else { return nil }
        return segments.reduce(0) { $0 + ((($1["written"] as? NSNumber)?.int64Value) ?? 0) }
    }

    // MARK: - Limits

    /// `ulimit -n 48` with `-n 32`. Before: the download aborted when sockets ran out. Now it uses the
    /// connections that fit, says so, and finishes.
    @Test func aLowOpenFileLimitShedsConnections() async throws {
        let size = 64 << 20
        let url = server.url("/gen/\(size)?seed=9").absoluteString
        let command = "ulimit -n 48 && exec '\(CLIRunner.fastpull.path)' -n 32 '\(url)' -o fd.bin"
        let result = try await CLIRunner.shell(command, in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("ulimit -n"), "\(result.stderr)")
        #expect(contents("fd.bin") == Data(FixtureContent.bytes(count: size, seed: 9)))
    }

    /// File descriptors run out in the middle of a download: its open-file limit is lowered (with
    /// `prlimit`) to the number of its third socket while six connections run, against a server that
    /// closes every connection after each answer, so every window needs a new socket and the journal
    /// a new temporary file. Before: the download aborted ("Too many open files"), and one run in
    /// three or so was stopped by Dispatch (SIGILL: it opens files in `/proc` to watch its threads).
    /// Now a spare descriptor is given back for Dispatch, the journal is still saved, the connections
    /// that find no descriptor (or would take the last) are shed with one warning, and it finishes on
    /// fewer.
    @Test func runningOutOfDescriptorsMidwayShedsConnections() async throws {
        let size = 16 << 20
        // 600 kB/s a connection: about 5 s on six, far longer than the wait for the first 2 MiB.
        let url = server.url("/gen/\(size)?seed=12&close=1&rate=600000").absoluteString
        let (process, out, err) = try CLIRunner.start(["-n", "6", url, "-o", "shed.bin"], in: folder)
        let server = server
        let pid = process.processIdentifier
        let descriptors = "/proc/\(pid)/fd"
        // Its sockets (each window's connection is a new one: between two there may be none).
        let sockets: @Sendable () -> [Int] = {
            ((try? FileManager.default.contentsOfDirectory(atPath: descriptors)) ?? []).filter {
                (try? FileManager.default.destinationOfSymbolicLink(atPath: descriptors + "/" + $0))?
                    .hasPrefix("socket:") == true
            }.compactMap(Int.init)
        }
        // On one thread of its own from the first bytes to the lowered limit: a test task resumed on
        // a busy cooperative pool can come back after the download has ended.
        let lowered = await CLIRunner.offPool { () -> (limit: Int?, running: Bool, status: Int32) in
            let deadline = Date().addingTimeInterval(20)
            while server.stats.bodyBytesSent <= 2 << 20, Date() < deadline { usleep(1000) }
            // The limit goes to the third socket's number: the first connection (the probe's, whose
            // descriptor is among the lowest) and one other keep room below it, the rest find none.
            var third: Int?
            while third == nil, Date() < deadline {
                let open = sockets().sorted()
                third = open.count >= 3 ? open[2] : nil
                if third == nil { usleep(500) }
            }
            guard let limit = third else { return (nil, false, -1) }
            let prlimit = Process()
            prlimit.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
            prlimit.arguments = ["--pid", "\(pid)", "--nofile=\(limit):\(limit)"]
            guard (try? prlimit.run()) != nil else { return (limit, false, -1) }
            prlimit.waitUntilExit()
            return (limit, kill(pid, 0) == 0, prlimit.terminationStatus)
        }
        #expect(lowered.limit != nil, "no socket open in \(descriptors)")
        #expect(lowered.running, "the download ended before its limit was lowered")
        #expect(lowered.status == 0, "prlimit exited \(lowered.status)")
        let result = await CLIRunner.finish(process, out, err)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("no file descriptor left"), "\(result.stderr)")
        #expect(result.stderr.contains("going on with"), "\(result.stderr)")
        #expect(contents("shed.bin") == Data(FixtureContent.bytes(count: size, seed: 12)))
    }

    /// A server claiming 2^50 or 2^62 bytes, under a 1.2 GB address-space limit. Before: the plan
    /// alone took 1.6 GB for 2^50, and 2^62 aborted the process ("failed to allocate"). Now: exit 7
    /// naming the size and the free space, with a peak RSS under 64 MB (measured by the parent: a
    /// Python wrapper reports its child's `ru_maxrss`).
    @Test(arguments: [50, 62])
    func anAbsurdSizeNeedsNoMemory(power: Int) async throws {
        let claimed = Int64(1) << power
        let url = server.url("/gen/\(claimed)").absoluteString
        let measure =
            "import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
            + "print('maxrss', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
            + "sys.exit(code)"
        let command =
            "ulimit -v 1200000 && exec python3 -c \"\(measure)\" '\(CLIRunner.fastpull.path)' -n 4 '\(url)' -o huge.bin"
        let result = try await CLIRunner.shell(command, in: folder)
        #expect(result.status == 7, "\(result.stderr)")
        #expect(
            result.stderr.contains("\(claimed) bytes") && result.stderr.contains("free"), "\(result.stderr)")
        let reported = result.stderr.split(separator: "\n").first { $0.hasPrefix("maxrss ") }
        let kilobytes = try #require(
            reported.flatMap { Int($0.dropFirst("maxrss ".count)) }, "\(result.stderr)")
        #expect(kilobytes > 0 && kilobytes < 64 * 1024, "peak RSS \(kilobytes) KB")
        #expect(listing.isEmpty, "\(listing)")
    }

    // MARK: - Names

    /// A URL whose last path component is 240 bytes long. Before: it failed mid-download, since the
    /// live journal's temporary file then needs 263 bytes of name, leaving a `.part` without a journal.
    /// Now the derived name is shortened to leave room (232 bytes, extension kept), and it saves.
    @Test func aLongDerivedNameLeavesRoomForThePartFiles() async throws {
        let files = folder + "/served"
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        let name = String(repeating: "n", count: 236) + ".bin"
        let body = Data(FixtureContent.bytes(count: 1 << 20, seed: 11))
        try body.write(to: URL(fileURLWithPath: files + "/" + name))
        var configuration = FixtureServer.Configuration()
        configuration.filesDirectory = files
        let origin = try FixtureServer(configuration)
        let out = folder + "/out"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let result = try await CLIRunner.run(
            ["-q", "-d", "out", origin.url("/files/\(name)").absoluteString], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let saved = try FileManager.default.contentsOfDirectory(atPath: out)
        #expect(saved.count == 1, "\(saved)")
        let savedName = try #require(saved.first)
        #expect(savedName.utf8.count == 232 && savedName.hasSuffix(".bin"), "\(savedName)")
        #expect(FileManager.default.contents(atPath: out + "/" + savedName) == body)
    }

    /// `-o` with a name that leaves no room for the files beside it is refused before anything happens.
    @Test func aTooLongOutputNameIsAUsageError() async throws {
        let name = String(repeating: "n", count: 236) + ".bin"
        let result = try await CLIRunner.run(
            ["-q", server.url("/gen/4096").absoluteString, "-o", name], in: folder)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("at most 232 bytes"), "\(result.stderr)")
        #expect(listing.isEmpty, "\(listing)")
    }
}
