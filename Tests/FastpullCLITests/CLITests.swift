import FastpullFixtures
import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine

@Suite("fastpull command line")
struct CLITests {
    let server: FixtureServer
    let folder: String

    init() throws {
        server = try FixtureServer()
        folder = try ScratchFolders.make("fastpull-cli").path
    }

    func contents(_ name: String) -> Data? { FileManager.default.contents(atPath: folder + "/" + name) }
    var listing: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted() }

    /// 500 kB/s per connection: every added connection adds throughput, so `auto` ramps past the
    /// connections it starts with. In a process of its own: the controller judges the CPU by the
    /// process's time, and the test process runs hundreds of other tests at once.
    @Test func automaticConnectionCountRampsUpWhenConnectionsAreThrottled() async throws {
        let size = 24 << 20
        let url = server.url("/gen/\(size)?seed=5&rate=500000").absoluteString
        let result = try await CLIRunner.run(
            ["--json", "--max-connections", "16", "--min-segment", "128K", url, "-o", "ramp.bin"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(contents("ramp.bin") == Data(FixtureContent.bytes(count: size, seed: 5)))
        let counts = result.connectionCounts
        let initial = ConnectionController.Settings().initial
        #expect(counts.contains { $0 > initial }, "\(counts)")
        #expect(counts.allSatisfy { $0 <= 16 }, "\(counts)")
    }

    @Test func downloadsAndPrintsASummary() async throws {
        let size = 3 << 20
        let url = server.url("/gen/\(size)?seed=3").absoluteString
        let result = try await CLIRunner.run(["-n", "3", url, "-o", "a.bin"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(contents("a.bin") == Data(FixtureContent.bytes(count: size, seed: 3)))
        // Where the file goes is said as it starts, and the summary gives the most connections used.
        let path = URL(fileURLWithPath: folder).appendingPathComponent("a.bin").path
        #expect(
            result.stderr.contains("fastpull: saving to \(path) (3.0 MiB)\n"), "\(result.stderr)")
        #expect(result.stderr.contains("up to 3 connections"), "\(result.stderr)")
        #expect(result.stderr.contains("saved"))
        // A file nothing checks is not hashed unless asked.
        #expect(!result.stderr.contains("sha256"), "\(result.stderr)")
        #expect(listing == ["a.bin"])
        // Asked for, its SHA-256 is printed whole, to compare with a published one.
        let again = try await CLIRunner.run(["-n", "3", url, "-o", "b.bin", "--sha256"], in: folder)
        #expect(again.status == 0, "\(again.stderr)")
        let sha256 = try BatchCLITests.sha256(FixtureContent.bytes(count: size, seed: 3))
        #expect(again.stderr.contains("up to 3 connections, sha256 \(sha256)\n"), "\(again.stderr)")
    }

    /// The proxy variables of the environment are honoured (read one by one): `http_proxy` sends the
    /// download to a proxy (here one that refuses, so the error names it), and `no_proxy` exempts the
    /// host again.
    @Test func proxyVariablesOfTheEnvironmentAreHonoured() async throws {
        let url = server.url("/gen/4096").absoluteString
        // Port 1 on loopback: nothing listens there.
        let refused = try await CLIRunner.run(
            ["--retries", "0", url, "-o", "p.bin"], in: folder,
            environment: ["http_proxy": "http://127.0.0.1:1", "no_proxy": "", "NO_PROXY": ""])
        #expect(refused.status == 3, "\(refused.stderr)")
        #expect(refused.stderr.contains("proxy http://127.0.0.1:1"), "\(refused.stderr)")
        let exempt = try await CLIRunner.run(
            ["--retries", "0", url, "-o", "p.bin"], in: folder,
            environment: ["http_proxy": "http://127.0.0.1:1", "no_proxy": "127.0.0.1"])
        #expect(exempt.status == 0, "\(exempt.stderr)")
        #expect(contents("p.bin")?.count == 4096)
    }

    /// A SOCKS4 proxy in any proxy variable is refused before anything is fetched, naming the
    /// variable, with the usage exit code; also with `--noproxy`, where the command line reads the
    /// variables itself. Before, `ALL_PROXY=socks5://…` was passed over and the download went direct
    /// (exit 0); SOCKS5 is spoken now (`SOCKSCLITests`).
    @Test(arguments: [
        ("http_proxy", "socks4"), ("HTTP_PROXY", "socks4a"), ("https_proxy", "socks"),
        ("HTTPS_PROXY", "socks4"), ("all_proxy", "socks4a"), ("ALL_PROXY", "socks"),
    ])
    func aSOCKSProxyInAnyVariableIsRefused(variable: String, scheme: String) async throws {
        let names = ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]
        // An empty value takes the variable out of the test's own environment.
        var environment = Dictionary(uniqueKeysWithValues: names.map { ($0, "") })
        environment[variable] = "\(scheme)://carol:S3cretPW@127.0.0.1:1080"
        let url = server.url("/gen/4096").absoluteString
        for extra in [[], ["--noproxy", "other.test"]] {
            let result = try await CLIRunner.run(
                extra + [url, "-o", "socks.bin"], in: folder, environment: environment)
            #expect(result.status == 2, "\(extra) \(result.stderr)")
            #expect(
                result.stderr.contains(
                    "error: \(variable): '\(scheme)://***@127.0.0.1:1080' is a SOCKS4 proxy (\(scheme)://), "
                        + "and only SOCKS5 is supported; use socks5h:// or an http:// proxy instead, or unset \(variable)"
                ),
                "\(extra) \(result.stderr)")
            #expect(!result.stderr.contains("S3cretPW"), "\(result.stderr)")
        }
        #expect(server.stats.requests == 0)
        #expect(contents("socks.bin") == nil)
    }

    /// The documents fastpull reads for itself (`--checksum-file`, `--metalink`) go through the proxy
    /// the download would take, so a SOCKS4 one refuses them before any connection: they went direct
    /// (around the proxy the user set) and only the download itself was refused.
    @Test(arguments: ["--checksum-file", "--metalink"])
    func aDocumentIsFetchedThroughTheDownloadsProxyOrNotAtAll(option: String) async throws {
        let names = ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]
        var environment = Dictionary(uniqueKeysWithValues: names.map { ($0, "") })
        environment["ALL_PROXY"] = "socks4a://127.0.0.1:1080"
        let document = server.url("/gen/4096?seed=3").absoluteString
        let url = server.url("/gen/4096").absoluteString
        let result = try await CLIRunner.run(
            [option, document, url, "-o", "doc.bin"], in: folder, environment: environment)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("is a SOCKS4 proxy (socks4a://)"), "\(result.stderr)")
        #expect(server.stats.requests == 0)
        #expect(contents("doc.bin") == nil)
    }

    /// What the terminal is given is escaped: an output name holding an escape sequence is said as
    /// `\x1B[31m`, which changes no colour (it printed the raw escape).
    @Test func controlCharactersInWhatIsPrintedAreEscaped() async throws {
        let url = server.url("/gen/2000").absoluteString
        let result = try await CLIRunner.run([url, "-o", "red\u{1B}[31m.bin"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(contents("red\u{1B}[31m.bin")?.count == 2000)
        #expect(result.stderr.contains("saving to \(folder)/red\\x1B[31m.bin (2.0 KiB)"), "\(result.stderr)")
        #expect(!result.stderr.contains("\u{1B}"), "\(result.stderr.debugDescription)")
    }

    /// The passwords of `-u`, of a URL's `user:password@` and of `--proxy` leave the process table
    /// (`/proc/PID/cmdline`, what `ps` shows every user) as the command starts: read while the
    /// download runs, they are stars, and the download still authenticates. They were readable for
    /// the whole run.
    @Test func passwordsAreNotInTheProcessTable() async throws {
        var configuration = FixtureServer.Configuration()
        configuration.basicCredentials = ("alice", "S3cretPW")
        let alice = try FixtureServer(configuration)
        configuration.basicCredentials = ("carol", "C4rolPW")
        let carol = try FixtureServer(configuration)
        // About 2 s at 200 kB/s, over one connection.
        let size = 400_000
        let path = "/gen/\(size)?seed=7&rate=200000"
        let carolURL = carol.url(path).absoluteString.replacingOccurrences(
            of: "http://", with: "http://carol:C4rolPW@")
        let runs: [(FixtureServer, [String], [String])] = [
            (
                alice,
                [
                    "-n", "1", "-u", "alice:S3cretPW", "--proxy", "http://dave:Pr0xyPW@127.0.0.1:1",
                    "--noproxy", "127.0.0.1", alice.url(path).absoluteString, "-o", "alice.bin",
                ],
                ["S3cretPW", "Pr0xyPW"]
            ),
            (carol, ["-n", "1", carolURL, "-o", "carol.bin"], ["C4rolPW"]),
        ]
        for (server, arguments, passwords) in runs {
            let (process, out, err) = try CLIRunner.start(arguments, in: folder)
            let pid = process.processIdentifier
            // Looked at once the server is sending the file (the request authenticated), while the
            // download still runs; on a thread of its own, off the test pool.
            let seen = await CLIRunner.offPool { () -> (cmdline: String, sent: Int64) in
                let deadline = Date().addingTimeInterval(20)
                while server.stats.bodyBytesSent == 0, Date() < deadline { usleep(1000) }
                let cmdline = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") ?? Data()
                return (String(decoding: cmdline, as: UTF8.self), server.stats.bodyBytesSent)
            }
            let result = await CLIRunner.finish(process, out, err)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(seen.sent > 0 && seen.sent < Int64(size), "looked at after \(seen.sent) bytes")
            #expect(seen.cmdline.contains("/gen/\(size)"), "\(seen.cmdline.debugDescription)")
            for password in passwords {
                #expect(!seen.cmdline.contains(password), "\(seen.cmdline.debugDescription)")
                #expect(seen.cmdline.contains(String(repeating: "*", count: password.count)))
            }
        }
        #expect(contents("alice.bin") == Data(FixtureContent.bytes(count: size, seed: 7)))
        #expect(contents("carol.bin") == Data(FixtureContent.bytes(count: size, seed: 7)))
        // The server asks for its credentials: without them the download is refused.
        let refused = try await CLIRunner.run(
            ["--retries", "0", alice.url("/gen/1000").absoluteString, "-o", "no.bin"], in: folder)
        #expect(refused.status == 4, "\(refused.stderr)")
        #expect(refused.stderr.contains("401"), "\(refused.stderr)")
    }

    /// A wait for a retry is on the progress line, with its reason and count (here the plain line of
    /// a stderr that is no terminal, printed every 3 s, during a 7 s `Retry-After`).
    @Test func aWaitForARetryIsShownWithItsReason() async throws {
        let url = server.url("/gen/5000?status=503&statuses=1&retry-after=7").absoluteString
        let result = try await CLIRunner.run([url, "-o", "w.bin"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("retrying in "), "\(result.stderr)")
        #expect(result.stderr.contains("(1/5): "), "\(result.stderr)")
        #expect(result.stderr.contains("503"), "\(result.stderr)")
        #expect(contents("w.bin")?.count == 5000)
    }

    /// On a terminal that cannot move its cursor (`TERM=dumb`) the progress is plain lines, with no
    /// escape sequence at all; on one that can, the live block redraws with them. Run in a pseudo-
    /// terminal by `script(1)`, which records every byte written to it.
    @Test(arguments: ["dumb", "xterm"])
    func aDumbTerminalGetsNoCursorMovement(term: String) async throws {
        // About 1.5 s at 200 kB/s: several redraws of a live block.
        let url = server.url("/gen/300000?rate=200000").absoluteString
        let log = folder + "/typescript-\(term)"
        let command = "env TERM=\(term) \(CLIRunner.fastpull.path) \(url) -o t-\(term).bin"
        let result = try await CLIRunner.shell(
            "script -q -e -c '\(command)' \(log) > /dev/null", in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let recorded = String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self)
        #expect(recorded.contains("saved"), "\(recorded)")
        let escapes = recorded.contains("\u{1B}[")
        #expect(escapes == (term != "dumb"), "\(recorded.debugDescription)")
    }

    /// `-v` shows every request and response head, with credentials and signatures redacted, and the
    /// connection count as it changes.
    @Test func verboseShowsTheHeadsWithSecretsRedacted() async throws {
        let url = server.url("/gen/3000000?X-Amz-Signature=deadbeef").absoluteString
        let result = try await CLIRunner.run(
            ["-v", "-n", "2", "-H", "Authorization: Bearer s3cret", "-u", "bob:pw", url, "-o", "v.bin"],
            in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stderr.contains("fastpull: > GET /gen/3000000?X-Amz-Signature=REDACTED HTTP/1.1"),
            "\(result.stderr)")
        #expect(result.stderr.contains("fastpull: > Range: bytes=0-"), "\(result.stderr)")
        #expect(result.stderr.contains("fastpull: < HTTP/1.1 206 Partial Content"), "\(result.stderr)")
        #expect(result.stderr.contains("fastpull: > Authorization: REDACTED"), "\(result.stderr)")
        #expect(result.stderr.contains("fastpull: * connections: 2"), "\(result.stderr)")
        for secret in ["s3cret", "deadbeef"] {
            #expect(!result.stderr.contains(secret), "\(secret) in \(result.stderr)")
        }
        #expect(!result.stderr.contains("Basic "), "\(result.stderr)")

        // A file named by the server: the probe that names it is its one request, and it is shown.
        let small = server.url("/gen/40000?seed=3").absoluteString
        let named = try await CLIRunner.run(["-v", small], in: folder)
        #expect(named.status == 0, "\(named.stderr)")
        let requests = named.stderr.split(separator: "\n").filter { $0.hasPrefix("fastpull: > GET ") }
        #expect(requests == ["fastpull: > GET /gen/40000?seed=3 HTTP/1.1"], "\(named.stderr)")
        #expect(named.stderr.contains("fastpull: < HTTP/1.1 206 Partial Content"), "\(named.stderr)")
        #expect(!named.stderr.contains("fastpull: > HEAD "), "\(named.stderr)")

        let both = try await CLIRunner.run(["-v", "-q", url], in: folder)
        #expect(both.status == 2)
        #expect(both.stderr.contains("--verbose and --quiet cannot be used together"))
    }

    /// More connections than one host may have: said, not silently capped.
    @Test func aCountAboveThePerHostLimitIsSaid() async throws {
        let result = try await CLIRunner.run(
            ["-n", "128", server.url("/gen/\(4 << 20)").absoluteString, "-o", "many.bin"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "warning: at most 64 connections go to one host (the per-host limit), not the 128 asked for"),
            "\(result.stderr)")
    }

    @Test func quietPrintsNothing() async throws {
        let result = try await CLIRunner.run(
            ["-q", "-n", "2", server.url("/gen/1000").absoluteString, "-o", "q.bin"], in: folder)
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        #expect(result.stdout.isEmpty)
        #expect(contents("q.bin")?.count == 1000)
    }

    @Test func outputNameComesFromTheURL() async throws {
        let result = try await CLIRunner.run([server.url("/redirect/1/gen/2048").absoluteString], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(listing == ["2048"])
    }

    @Test func checksumMismatchExitsSixAndLeavesNothing() async throws {
        let wrong = String(repeating: "ab", count: 32)
        let result = try await CLIRunner.run(
            [server.url("/gen/5000").absoluteString, "-o", "c.bin", "--checksum", "sha256=\(wrong)"],
            in: folder)
        #expect(result.status == 6)
        #expect(result.stderr.contains("sha256 mismatch"))
        #expect(result.stderr.contains(wrong))
        #expect(listing.isEmpty)
    }

    @Test func matchingChecksumIsReported() async throws {
        let result = try await CLIRunner.run(
            [
                server.url("/gen/0").absoluteString, "-o", "empty.bin", "--checksum",
                "sha256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            ], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("checksum verified"))
        #expect(contents("empty.bin") == Data())
    }

    @Test func notFoundExitsFourNamingTheURL() async throws {
        let url = server.url("/gen/10?status=404").absoluteString
        let result = try await CLIRunner.run([url, "-o", "x"], in: folder)
        #expect(result.status == 4)
        #expect(result.stderr.contains("404"))
        #expect(result.stderr.contains(url))
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(listing.isEmpty)
    }

    /// `--json`'s `failed` event carries the HTTP status and the URL that answered (here the end of
    /// a redirect), so a script tells a missing file from a server that is down without the message.
    @Test func theFailedEventCarriesTheStatusAndTheURLThatAnswered() async throws {
        let asked = server.url("/redirect/1/gen/10?status=404").absoluteString
        let answered = server.url("/gen/10?status=404").absoluteString
        let result = try await CLIRunner.run([asked, "-o", "x", "--json"], in: folder)
        #expect(result.status == 4)
        let failed = try #require(
            result.stdout.split(separator: "\n").first { $0.contains("\"event\":\"failed\"") },
            "\(result.stdout)")
        #expect(failed.contains("\"httpStatus\":404"), "\(failed)")
        #expect(failed.contains("\"failedURL\":\"\(answered)\""), "\(failed)")
        // A failure with no HTTP answer has none.
        let refused = try await CLIRunner.run(
            ["http://127.0.0.1:\(try LoopbackPort.free())/x", "-o", "y", "--json"], in: folder)
        #expect(refused.status == 3)
        #expect(refused.stdout.contains("\"httpStatus\":null"), "\(refused.stdout)")
    }

    @Test func connectionRefusedExitsThree() async throws {
        // Port 1 has no listener here; a stopped server's port could be taken by another test's server.
        let result = try await CLIRunner.run(
            ["--retries", "0", "http://127.0.0.1:1/x", "-o", "x"], in: folder)
        #expect(result.status == 3)
        #expect(result.stderr.contains("127.0.0.1"))
    }

    @Test(arguments: [
        (["-n", "x", "http://h/x"], "--connections"),
        (["-n", "0", "http://h/x"], "--connections"),
        (["--min-segment", "lots", "http://h/x"], "--min-segment"),
        (["--checksum", "sha256=xyz", "http://h/x"], "--checksum"),
        (["--checksum", "crc99=00", "http://h/x"], "--checksum"),
        (["--timeout", "-1", "http://h/x"], "--timeout"),
        (["--bogus", "http://h/x"], "--bogus"),
        (["-o"], "--output"),
        ([], "missing URL"),
        (["ftp://h/x"], "unsupported scheme"),
        (["not a url"], "not a valid URL"),
        (["-o", "x", "http://h/a", "http://h/b"], "--output"),
    ])
    func badUsageExitsTwo(arguments: [String], mention: String) async throws {
        let result = try await CLIRunner.run(arguments, in: folder)
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("fastpull: error: "))
        #expect(result.stderr.contains(mention))
        #expect(listing.isEmpty)
    }

    @Test func helpListsOptionsAndExitCodes() async throws {
        let result = try await CLIRunner.run(["--help"], in: folder)
        #expect(result.status == 0)
        for text in ["--connections", "--checksum", "--cacert", "--insecure", "EXIT CODES", "130"] {
            #expect(result.stdout.contains(text))
        }
    }

    @Test func httpsWithTheTestAuthorityAndWithout() async throws {
        var configuration = FixtureServer.Configuration()
        configuration.tls = true
        let tlsServer = try FixtureServer(configuration)
        let url = tlsServer.url("/gen/100000").absoluteString
        let ca = FixturePaths.certificatesDirectory + "/ca.pem"
        let trusted = try await CLIRunner.run([url, "-o", "t.bin", "--cacert", ca], in: folder)
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(contents("t.bin") == Data(FixtureContent.bytes(count: 100_000, seed: 1)))
        let untrusted = try await CLIRunner.run([url, "-o", "u.bin"], in: folder)
        #expect(untrusted.status == 8)
        #expect(untrusted.stderr.contains("--cacert"))
        let insecure = try await CLIRunner.run([url, "-o", "i.bin", "--insecure"], in: folder)
        #expect(insecure.status == 0)
        #expect(insecure.stderr.contains("warning: --insecure"))
    }

    @Test func interruptExitsOneThirty() async throws {
        // 100 kB/s per connection: the download takes far longer than any wait for the test's turn.
        let url = server.url("/gen/\(64 << 20)?rate=100000").absoluteString
        let (process, out, err) = try CLIRunner.start([url, "-o", "slow.bin"], in: folder)
        // Wait (on a thread of its own, so a busy pool cannot make it late) until the download is
        // under way, and interrupt it right there.
        let server = server
        let started = await CLIRunner.offPool {
            let deadline = Date().addingTimeInterval(20)
            while server.stats.bodyBytesSent == 0, Date() < deadline { usleep(1000) }
            process.interrupt()
            return server.stats.bodyBytesSent > 0
        }
        #expect(started)
        let result = await CLIRunner.finish(process, out, err)
        #expect(result.status == 130)
        #expect(result.stderr.contains("fastpull: stopped"), "\(result.stderr)")
        #expect(!listing.contains("slow.bin"))
    }
}
