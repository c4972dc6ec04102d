import Foundation
import Testing

@testable import Fastpull
@testable import FastpullCommandLine
@testable import FastpullEngine

@Suite("Option parser and typed options")
struct OptionParserTests {
    func parse(_ arguments: [String]) throws -> ParsedArguments {
        try ArgumentParser.parse(arguments)
    }

    func options(_ arguments: [String]) throws -> CommandOptions {
        try CommandOptions(try ArgumentParser.parse(arguments))
    }

    func usageMessage(_ arguments: [String]) -> String? {
        do {
            _ = try options(arguments)
            return nil
        } catch {
            return (error as? UsageError)?.message
        }
    }

    @Test func everyOptionInTheTableParsesInEveryForm() throws {
        for option in OptionTable.all {
            let value = option.takesValue ? "v1" : ""
            var forms: [[String]] = [option.takesValue ? ["--\(option.long)", "v1"] : ["--\(option.long)"]]
            if option.takesValue { forms.append(["--\(option.long)=v1"]) }
            if let short = option.short {
                forms.append(option.takesValue ? ["-\(short)", "v1"] : ["-\(short)"])
                if option.takesValue { forms.append(["-\(short)v1"]) }
            }
            for form in forms {
                let parsed = try parse(form + ["http://h/x"])
                #expect(parsed.values[option.long] == [value], "\(form)")
                #expect(parsed.positionals == ["http://h/x"], "\(form)")
            }
        }
    }

    @Test func namesAreUnique() {
        let longs = OptionTable.all.map(\.long)
        #expect(Set(longs).count == longs.count)
        let shorts = OptionTable.all.compactMap(\.short)
        #expect(Set(shorts).count == shorts.count)
    }

    @Test func bundledFlagsRepeatsAndOrder() throws {
        let parsed = try parse(["-qk", "-H", "A: 1", "--header=B: 2", "-Hc: 3", "http://h/1", "http://h/2"])
        #expect(parsed.has("quiet"))
        #expect(parsed.has("insecure"))
        #expect(parsed.all("header") == ["A: 1", "B: 2", "c: 3"])
        #expect(parsed.positionals == ["http://h/1", "http://h/2"])
        // A bundle ends at the first option that takes a value, which takes the rest.
        let bundle = try parse(["-qn4"])
        #expect(bundle.last("connections") == "4")
        // The last of a single-valued option wins.
        #expect(try parse(["-n", "2", "-n", "3"]).last("connections") == "3")
    }

    @Test func doubleDashEndsOptionsAndDashIsPositional() throws {
        let parsed = try parse(["-q", "--", "-o", "--json", "http://h/x"])
        #expect(parsed.has("quiet"))
        #expect(!parsed.has("output"))
        #expect(parsed.positionals == ["-o", "--json", "http://h/x"])
        #expect(try parse(["-i", "-"]).last("input-file") == "-")
        #expect(try parse(["-"]).positionals == ["-"])
        // A value that starts with a dash is still the option's value.
        #expect(try parse(["--timeout", "-1"]).last("timeout") == "-1")
    }

    @Test(arguments: [
        (["--bogus"], "error: unknown option '--bogus' (see fastpull --help)"),
        (["--outptu", "x"], "error: unknown option '--outptu' (did you mean '--output'?)"),
        (["-Z"], "error: unknown option '-Z' (see fastpull --help)"),
        (["-o"], "error: --output: expected a value"),
        (["--quiet=yes"], "error: --quiet: takes no value"),
    ])
    func parseErrors(arguments: [String], message: String) {
        #expect(throws: UsageError(message: message)) { try parse(arguments) }
    }

    @Test func typedValues() throws {
        let parsed = try options([
            "-n", "6", "--max-connections", "20", "--min-segment", "2MiB", "--limit-rate", "500K/s",
            "--timeout", "2.5", "--connect-timeout", "3", "--stall-timeout", "4", "--retries", "0",
            "-H", "X-Token: abc", "-H", "Accept:  */*", "-A", "tool/1.0", "-u", "bob:s:cret",
            "--proxy", "proxy.local:3128", "--noproxy", "a.test, .b.test", "--checksum",
            "sha256=\(String(repeating: "ab", count: 32))", "--keep-partial", "-k", "--restart", "-j", "3",
            "--max-connections-per-host", "7", "--force", "--dry-run", "--json", "-q", "-d", "out",
            "--trace", "t.jsonl", "-Y", "2K/s", "--speed-time", "15", "--retry-delay", "0.5",
            "--retry-connrefused",
            "-R", "--verify", "http://h/x",
        ])
        let configuration = parsed.configuration
        #expect(configuration.connections.count == .fixed(6))
        #expect(configuration.connections.maximum == 20)
        #expect(configuration.connections.minimumSegmentSize == 2 << 20)
        #expect(configuration.connections.maximumBytesPerSecond == 500 << 10)
        #expect(
            configuration.timeouts.lowestSpeed == LowestSpeed(bytesPerSecond: 2048, duration: .seconds(15)))
        #expect(configuration.timeouts.idle == .milliseconds(2500))
        #expect(configuration.timeouts.connect == .seconds(3))
        #expect(configuration.timeouts.stall == .seconds(4))
        #expect(configuration.retries.limit == 0)
        #expect(configuration.retries.baseDelay == .milliseconds(500))
        #expect(configuration.retries.retriesRefusedConnections)
        #expect(configuration.resume.keepsServerTime)
        #expect(configuration.integrity.verifiesSavedFiles && configuration.integrity.computesSHA256)
        #expect(!(try options(["http://h/x"])).configuration.retries.retriesRefusedConnections)
        #expect(
            configuration.request.headers == [
                Header(name: "X-Token", value: "abc"), Header(name: "Accept", value: "*/*"),
            ])
        #expect(configuration.request.userAgent == "tool/1.0")
        #expect(parsed.user == Credentials(user: "bob", password: "s:cret"))
        #expect(parsed.proxy == "http://proxy.local:3128")
        #expect(parsed.noProxy == ["a.test", ".b.test"])
        #expect(configuration.integrity.checksums.count == 1)
        #expect(configuration.integrity.keepsPartialOnMismatch)
        #expect(configuration.tls.insecure)
        #expect(!configuration.resume.fromJournal)
        #expect(configuration.resume.restartsWhenRemoteChanges)
        #expect(configuration.connections.maximumPerHost == 7)
        #expect(configuration.diagnostics.traceFile == "t.jsonl")
        #expect(parsed.parallelFiles == 3)
        #expect(parsed.force && parsed.dryRun && parsed.json && parsed.quiet)
        #expect(parsed.directory == "out")
        #expect(try options(["-n", "auto", "http://h/x"]).configuration.connections.count == .automatic)
        #expect(try options(["--proxy", "", "http://h/x"]).proxy == "")
    }

    @Test(arguments: [
        (
            ["-n", "x", "http://h/x"],
            "error: --connections: expected a number from 1 to 128 or 'auto', got 'x'"
        ),
        (
            ["-n", "0", "http://h/x"],
            "error: --connections: expected a number from 1 to 128 or 'auto', got '0'"
        ),
        (
            ["--max-connections", "200", "http://h/x"],
            "error: --max-connections: expected a number from 1 to 128, got '200'"
        ),
        (
            ["--min-segment", "lots", "http://h/x"],
            "error: --min-segment: expected a size like 1M or 512KiB, got 'lots'"
        ),
        (
            ["--limit-rate", "fast", "http://h/x"],
            "error: --limit-rate: expected a rate like 500K/s or 2MiB/s, got 'fast'"
        ),
        (
            ["--limit-rate", "0", "http://h/x"],
            "error: --limit-rate: expected a rate like 500K/s or 2MiB/s, got '0'"
        ),
        (
            ["--speed-limit", "slow", "http://h/x"],
            "error: --speed-limit: expected a rate like 1K/s or 100KiB/s, or 0 for none, got 'slow'"
        ),
        (
            ["--speed-time", "0", "http://h/x"],
            "error: --speed-time: expected a number of seconds above 0, got '0'"
        ),
        (
            ["--timeout", "-1", "http://h/x"],
            "error: --timeout: expected a number of seconds above 0, got '-1'"
        ),
        (
            ["--connect-timeout", "nan", "http://h/x"],
            "error: --connect-timeout: expected a number of seconds above 0, got 'nan'"
        ),
        (["--retries", "-2", "http://h/x"], "error: --retries: expected a number from 0 to 1000, got '-2'"),
        (["-j", "0", "http://h/x"], "error: --parallel-files: expected a number from 1 to 64, got '0'"),
        (["-H", "NoColon", "http://h/x"], "error: --header: expected 'Name: value', got 'NoColon'"),
        (
            ["-H", "Bad Name: v", "http://h/x"],
            "error: --header: expected a field name of letters, digits and -, got 'Bad Name: v'"
        ),
        (["-u", "bob", "http://h/x"], "error: --user: expected USER:PASSWORD, got 'bob'"),
        (
            ["--proxy", "ftp://p:21", "http://h/x"],
            "error: --proxy: expected a proxy URL like http://proxy:3128 or socks5h://proxy:1080, got 'ftp://p:21'"
        ),
        (
            ["--proxy", "socks4://u:pw@p:1080", "http://h/x"],
            "error: --proxy: 'socks4://***@p:1080' is a SOCKS4 proxy (socks4://), and only SOCKS5 is supported; use socks5h:// or an http:// proxy instead"
        ),
        (["--checksum", "sha256=xyz", "http://h/x"], "--checksum"),
        (
            ["--cacert", "/nonexistent/ca.pem", "http://h/x"],
            "error: --cacert: cannot read '/nonexistent/ca.pem'"
        ),
        (
            ["--netrc-file", "/nonexistent/netrc", "http://h/x"],
            "error: --netrc-file: cannot read '/nonexistent/netrc'"
        ),
        (["-i", "/nonexistent/list", "http://h/x"], "error: --input-file: cannot read '/nonexistent/list'"),
        (
            ["--restart", "--no-restart", "http://h/x"],
            "error: --restart and --no-restart cannot be used together"
        ),
        ([], "error: missing URL"),
        (["ftp://h/x"], "error: unsupported scheme 'ftp' in 'ftp://h/x' (use http or https)"),
        (["not a url"], "error: 'not a url' is not a valid URL"),
        (["-o", "x", "http://h/a", "http://h/b"], "error: --output: names one file, but there are 2 URLs"),
        (
            ["--checksum", "md5=\(String(repeating: "0", count: 32))", "http://h/a", "http://h/b"],
            "error: --checksum: applies to one file"
        ),
        (["--trace", "t", "http://h/a", "http://h/b"], "error: --trace: records one download"),
    ])
    func badValuesNameTheOption(arguments: [String], message: String) throws {
        let actual = try #require(usageMessage(arguments))
        #expect(actual.hasPrefix("error: "))
        #expect(actual.contains(message), "\(actual)")
    }

    /// With `--noproxy` the command line picks the environment's proxy itself: `ALL_PROXY` serves a
    /// scheme without its own variable (it was passed over, and the download went direct), and a
    /// SOCKS proxy there is a usage error naming the variable (it was passed over too).
    @Test func noproxyKeepsAllProxyAndRefusesSOCKS() throws {
        let parsed = try options(["--noproxy", "local.test", "http://h.test/a"])
        let jobs = try parsed.jobs(
            lines: [], netrc: nil, environment: ["ALL_PROXY": "http://all.test:3"], workingDirectory: "/work")
        #expect(
            jobs[0].item.configuration?.request.proxy == .url("http://all.test:3", bypass: ["local.test"]))
        #expect {
            try parsed.jobs(
                lines: [], netrc: nil, environment: ["all_proxy": "socks4a://u:pw@p.test:1080"],
                workingDirectory: "/work")
        } throws: { error in
            (error as? UsageError)?.message
                == "error: all_proxy: 'socks4a://***@p.test:1080' is a SOCKS4 proxy (socks4a://), and only SOCKS5 is supported; use socks5h:// or an http:// proxy instead, or unset all_proxy"
        }
    }

    /// A folder given through a symbolic link and `..` (`-d /r/a/link/..`, the link to `../other/x`)
    /// is the folder the system opens, `/r/other`, as for curl's `-o` and aria2c's `-d`: a named
    /// file lands in it, beside the files named by their servers (before, a named one went to
    /// `/r/a`, the rest to `/r/other`).
    @Test func aFolderThroughALinkAndDotDotIsTheOneTheSystemOpens() throws {
        let manager = FileManager.default
        let root = manager.temporaryDirectory.appending(path: "joblink-\(UUID().uuidString)")
        defer { try? manager.removeItem(at: root) }
        try manager.createDirectory(at: root.appending(path: "other/x"), withIntermediateDirectories: true)
        try manager.createDirectory(at: root.appending(path: "a"), withIntermediateDirectories: true)
        try manager.createSymbolicLink(
            atPath: root.appending(path: "a/link").path(percentEncoded: false),
            withDestinationPath: "../other/x")
        var rootPath = root.path(percentEncoded: false)
        if rootPath.hasSuffix("/") { rootPath.removeLast() }
        let parsed = try options(["-d", rootPath + "/a/link/..", "http://h.test/a"])
        let maker = parsed.jobMaker(netrc: nil, environment: [:], workingDirectory: "/")
        let named = CommandOptions.JobMaker.file(
            "f.bin", in: maker.folder, standardFolder: maker.standardFolder)
        let system = URL(filePath: rootPath + "/a/link/..").resolvingSymlinksInPath()
        #expect(
            named.path(percentEncoded: false) == system.appending(path: "f.bin").path(percentEncoded: false))
        // The folder a server-named file goes to is the same one.
        #expect(
            maker.standardFolder.appending(path: "f.bin").path(percentEncoded: false)
                == named.path(percentEncoded: false))
        #expect(named.path(percentEncoded: false).hasSuffix("/other/f.bin"))
    }

    @Test func byteSizes() {
        #expect(ByteSize.parse("1048576") == 1 << 20)
        #expect(ByteSize.parse("512K") == 512 << 10)
        #expect(ByteSize.parse("512k") == 512 << 10)
        #expect(ByteSize.parse("1M") == 1 << 20)
        #expect(ByteSize.parse("2G") == 2 << 30)
        #expect(ByteSize.parse("1KiB") == 1 << 10)
        #expect(ByteSize.parse("3MiB") == 3 << 20)
        #expect(ByteSize.parse("1GiB") == 1 << 30)
        #expect(ByteSize.parse("10B") == 10)
        for bad in ["", "M", "-1M", "1.5M", "1T", "x", "1 M", "99999999999G", "١M"] {
            #expect(ByteSize.parse(bad) == nil, "\(bad)")
        }
        #expect(ByteSize.parseRate("500K/s") == 500 << 10)
        #expect(ByteSize.parseRate("2MiB/s") == 2 << 20)
        #expect(ByteSize.parseRate("2M") == 2 << 20)
        #expect(ByteSize.parseRate("/s") == nil)
    }

    @Test func netrcEntriesAndDefault() {
        let netrc = Netrc(
            parsing: """
                # a comment
                machine example.org login alice password "p w\\"d"
                machine other.test
                    login carol
                    password c4
                macdef init
                machine evil.test login eve password nope

                default login anon password guest
                """)
        #expect(netrc.credentials(for: "EXAMPLE.org") == Credentials(user: "alice", password: "p w\"d"))
        #expect(netrc.credentials(for: "other.test") == Credentials(user: "carol", password: "c4"))
        // The macro's body is not an entry.
        #expect(netrc.credentials(for: "evil.test") == Credentials(user: "anon", password: "guest"))
        #expect(netrc.credentials(for: "unknown.test") == Credentials(user: "anon", password: "guest"))
        #expect(Netrc(parsing: "machine a login b").credentials(for: "a") == nil)
    }

    @Test func jobsGetDestinationsCredentialsAndProxies() throws {
        let parsed = try options([
            "-i", "/dev/null", "-d", "out", "--noproxy", "local.test", "https://u%40x:p%3Aw@h.test/a",
            "http://local.test/b",
        ])
        let netrc = Netrc(parsing: "machine local.test login n password np")
        let lines = try BatchFile.parse(
            "http://h.test/c c.bin sha256=\(String(repeating: "0", count: 64))", source: "list")
        let jobs = try parsed.jobs(
            lines: lines, netrc: netrc,
            environment: ["https_proxy": "http://p.test:1", "HTTP_PROXY": "http://p.test:2"],
            workingDirectory: "/work")
        #expect(jobs.count == 3)
        #expect(jobs.map(\.origin) == ["argument 1", "argument 2", "/dev/null:1"])
        // Credentials in the URL are taken out of it.
        #expect(jobs[0].item.url.absoluteString == "https://h.test/a")
        #expect(jobs[0].item.configuration?.request.credentials == Credentials(user: "u@x", password: "p:w"))
        #expect(jobs[1].item.configuration?.request.credentials == Credentials(user: "n", password: "np"))
        #expect(jobs[0].item.configuration?.request.proxy == .url("http://p.test:1", bypass: ["local.test"]))
        #expect(jobs[1].item.configuration?.request.proxy == .url("http://p.test:2", bypass: ["local.test"]))
        #expect(jobs[0].item.destination == .folder(URL(fileURLWithPath: "/work/out", isDirectory: true)))
        #expect(jobs[2].item.destination == .file(URL(fileURLWithPath: "/work/out/c.bin")))
        // A list line's checksum is the line's (reported as `input file /dev/null line 1`).
        #expect(jobs[2].item.configuration?.integrity.checksums.isEmpty == true)
        #expect(
            jobs[2].item.configuration?.integrity.describedChecksums?.document
                == "input file /dev/null line 1")
        #expect(jobs[2].item.configuration?.integrity.describedChecksums?.checksums.count == 1)

        // An absolute output is taken as it is, one with dot segments standardized.
        let absolute = try parsed.jobs(
            lines: try BatchFile.parse(
                "http://h.test/d /abs/d.bin\nhttp://h.test/e /abs/sub/../e.bin\nhttp://h.test/f /abs//./f.bin",
                source: "list"),
            netrc: netrc, environment: [:], workingDirectory: "/work")
        #expect(
            absolute.suffix(3).map(\.item.destination) == [
                .file(URL(fileURLWithPath: "/abs/d.bin")), .file(URL(fileURLWithPath: "/abs/e.bin")),
                .file(URL(fileURLWithPath: "/abs/f.bin")),
            ])
        #expect(CommandOptions.isStandardAbsolutePath("/abs/d.bin"))
        #expect(CommandOptions.isStandardAbsolutePath("/a.b/..c/.d"))
        for path in ["abs/d.bin", "/abs/../d", "/abs/./d", "/abs//d", "/abs/d/", "/abs/.", "/abs/..", ""] {
            #expect(!CommandOptions.isStandardAbsolutePath(path), "\(path)")
        }

        // A relative output is joined to the folder as it is when nothing needs standardizing, and
        // standardized otherwise; either way it names what resolving it against the folder names.
        let folder = URL(fileURLWithPath: "/work/out/../dl", isDirectory: true)
        for output in [
            "f.bin", "sub/f.bin", "../f.bin", "./f.bin", "a//b", "sub/", ".f", "a/../../b", "a b%20c.bin",
            "ü?#.bin",
        ] {
            let expected = URL(filePath: output, directoryHint: .inferFromPath, relativeTo: folder)
                .standardizedFileURL
            let made = CommandOptions.JobMaker.file(
                output, in: folder, standardFolder: folder.standardizedFileURL)
            #expect(made.path(percentEncoded: false) == expected.path(percentEncoded: false), "\(output)")
            #expect(made.hasDirectoryPath == expected.hasDirectoryPath, "\(output)")
        }
        #expect(
            CommandOptions.JobMaker.file("f.bin", in: folder, standardFolder: folder.standardizedFileURL)
                .path(percentEncoded: false) == "/work/dl/f.bin")
        // A name starting with `~` is a name in the folder: a list line does not reach the home folder.
        #expect(
            CommandOptions.JobMaker.file("~/x", in: folder, standardFolder: folder.standardizedFileURL)
                .path(percentEncoded: false) == "/work/dl/~/x")

        let plain = try options(["-u", "a:b", "http://h.test/a"])
        let job = try #require(
            try plain.jobs(lines: [], netrc: netrc, environment: [:], workingDirectory: "/w").first)
        #expect(job.item.configuration?.request.proxy == .environment)
        #expect(job.item.configuration?.request.credentials == Credentials(user: "a", password: "b"))
    }

    @Test func twoJobsWritingOneFileIsAUsageError() throws {
        let parsed = try options(["-i", "/dev/null"])
        let lines = try BatchFile.parse("http://h/a same.bin\nhttp://h/b same.bin\n", source: "list")
        #expect(throws: UsageError.self) {
            try parsed.jobs(lines: lines, netrc: nil, environment: [:], workingDirectory: "/w")
        }
    }

    /// Every option and exit code, every line within the width asked for (the terminal's; 80 for a
    /// pipe), down to 60 columns. Before: 100 columns, and 31 of 82 lines too wide for 80.
    @Test(arguments: [HelpText.defaultWidth, 60, 72, 120])
    func helpListsEveryOptionAndExitCodeWithinItsWidth(width: Int) {
        let text = HelpText.text(width: width)
        for option in OptionTable.all {
            #expect(text.contains(option.synopsis), "\(option.long)")
        }
        for (code, _) in ExitCodeTable.rows {
            #expect(text.contains("\n  \(code) "))
        }
        let wide = text.split(separator: "\n").filter { $0.count > width }
        #expect(wide.isEmpty, "\(wide)")
        #expect(HelpText.text == HelpText.text(width: 80))
        #expect(Set(ExitCodeTable.rows.map(\.code)) == Set(FastpullError.Code.allCases.map(\.rawValue) + [0]))
    }
}

/// `--speed-limit` and `--speed-time`: the lowest speed, on by default.
@Suite("Lowest speed options")
struct LowestSpeedOptionTests {
    func configuration(_ arguments: [String]) throws -> Configuration {
        try CommandOptions(try ArgumentParser.parse(arguments + ["http://h/x"])).configuration
    }

    @Test func onByDefaultOffWithZero() throws {
        #expect(try configuration([]).timeouts.lowestSpeed == .standard)
        #expect(try configuration(["--speed-limit", "0"]).timeouts.lowestSpeed == nil)
        #expect(try configuration(["--speed-limit", "0", "--speed-time", "5"]).timeouts.lowestSpeed == nil)
        #expect(
            try configuration(["-y", "5"]).timeouts.lowestSpeed
                == LowestSpeed(bytesPerSecond: 1024, duration: .seconds(5)))
    }

    /// Under a rate limit of its own the floor is a quarter of that rate, so `--limit-rate` alone never
    /// trips it.
    @Test func aRateLimitLowersTheFloor() throws {
        #expect(try configuration(["--limit-rate", "1K/s"]).effectiveLowestSpeed?.bytesPerSecond == 256)
        #expect(try configuration(["--limit-rate", "1M/s"]).effectiveLowestSpeed?.bytesPerSecond == 1024)
    }
}

/// The lowest-speed watch, fed made-up progress.
@Suite("SpeedWatch")
struct SpeedWatchTests {
    let t0 = ContinuousClock.now
    func at(_ seconds: Double) -> ContinuousClock.Instant { t0 + .milliseconds(Int64(seconds * 1000)) }

    /// 100 B/s against a 1 KiB/s floor over 10 s: too slow only once 10 s have passed.
    @Test func tooSlowOnlyAfterTheWholeDuration() {
        var watch = SpeedWatch(floor: LowestSpeed(bytesPerSecond: 1024, duration: .seconds(10)))
        var verdicts: [Bool] = []
        for second in 0...12 {
            verdicts.append(
                watch.tooSlow(progress: Int64(second * 100), waiting: false, now: at(Double(second))))
        }
        #expect(verdicts.prefix(10).allSatisfy { !$0 })
        #expect(verdicts[10] && verdicts[12])
    }

    /// A fast stretch inside the window keeps it going, and a wait for a retry starts it afresh.
    @Test func aFastStretchOrARetryWaitKeepsItGoing() {
        var watch = SpeedWatch(floor: LowestSpeed(bytesPerSecond: 1000, duration: .seconds(10)))
        let steps: [(progress: Int64, waiting: Bool, at: Double)] = [
            (0, false, 0), (20_000, false, 5), (20_000, false, 10), (20_000, true, 14), (20_000, false, 20),
            (20_000, false, 30),
        ]
        let verdicts = steps.map { watch.tooSlow(progress: $0.progress, waiting: $0.waiting, now: at($0.at)) }
        #expect(verdicts == [false, false, false, false, false, true])
    }

    /// The time the download waits for the reader of its output stops the clock: 75 s of a reader
    /// that takes nothing, against 1 KiB/s over 60 s, is not the server's slowness (before: too slow
    /// at 60 s). Once the reader reads again, a server that then sends nothing is too slow after the
    /// rest of the minute.
    @Test func timeWaitingForTheReaderDoesNotCount() {
        var watch = SpeedWatch(floor: LowestSpeed(bytesPerSecond: 1024, duration: .seconds(60)))
        // 1 MiB in the first 5 s, then the reader stops for 75 s while nothing more arrives.
        var verdicts = [watch.tooSlow(progress: 0, waiting: false, now: at(0))]
        verdicts.append(watch.tooSlow(progress: 1 << 20, waiting: false, now: at(5)))
        for second in stride(from: 6, through: 80, by: 1) {
            let waited = Duration.seconds(second - 5)
            verdicts.append(
                watch.tooSlow(progress: 1 << 20, waiting: false, outputWait: waited, now: at(Double(second))))
        }
        #expect(!verdicts.contains(true))
        // The reader is back; the server sends nothing from now on.
        let waited = Duration.seconds(75)
        let afterwards = (81...200).map {
            watch.tooSlow(progress: 1 << 20, waiting: false, outputWait: waited, now: at(Double($0)))
        }
        // Too slow once 60 s of the network's own time have passed without a byte: 5 + 60 + 75.
        #expect(afterwards.firstIndex(of: true).map { 81 + $0 } == 140)
    }
}

/// A `.netrc` with passwords that other users can read is used, with a warning.
@Suite("netrc permissions")
struct NetrcPermissionTests {
    @Test(arguments: [0o600, 0o644] as [mode_t])
    func aNetrcReadableByOthersIsWarnedAbout(mode: mode_t) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("netrc-\(UUID().uuidString)")
            .path
        try Data("machine h.test login bob password s3cret\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        chmod(path, mode)
        let options = try CommandOptions(try ArgumentParser.parse(["--netrc-file", path, "http://h.test/x"]))
        let (netrc, warning) = try options.loadNetrcWithWarning(environment: [:])
        #expect(netrc?.credentials(for: "h.test") != nil)
        if mode == 0o600 {
            #expect(warning == nil)
        } else {
            #expect(warning?.contains("chmod 600") == true, "\(warning ?? "none")")
        }
    }
}
