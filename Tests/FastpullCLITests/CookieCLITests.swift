import FastpullFixtures
import Foundation
import Testing

/// Cookies: a set-cookie-then-redirect link, a Netscape cookie file in (`-b`, `--load-cookies`) and
/// out (`--cookie-jar`), `NAME=VALUE`, `--no-cookies`, and bad input.
@Suite("fastpull cookies")
struct CookieCLITests {
    func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }

    @Test func aCookieSetOnTheWayIsSentToEverySegmentAndSavedToTheJar() async throws {
        let server = try FixtureServer()
        let folder = try ScratchFolders.make("fastpull-cookies").path
        let size = 400_000
        let target = "/gen/\(size)?seed=97&cookie=\(encoded("sid=abc"))"
        let url = server.url(
            "/redirect-to?url=\(encoded(target))&set-cookie=\(encoded("sid=abc; Path=/; HttpOnly"))"
        ).absoluteString
        let result = try await CLIRunner.run(
            [url, "-o", "x.bin", "-n", "4", "--min-segment", "64K", "--cookie-jar", "jar.txt"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            FileManager.default.contents(atPath: folder + "/x.bin")
                == Data(FixtureContent.bytes(count: size, seed: 97)))
        let jar = try String(contentsOfFile: folder + "/jar.txt", encoding: .utf8)
        #expect(jar.contains("#HttpOnly_127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tabc\n"), "\(jar)")
        let mode =
            try FileManager.default.attributesOfItem(atPath: folder + "/jar.txt")[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let refused = try await CLIRunner.run([url, "-o", "y.bin", "--no-cookies"], in: folder)
        #expect(refused.status == 4, "\(refused.stderr)")
        #expect(refused.stderr.contains("HTTP 403"), "\(refused.stderr)")
    }

    @Test func aCookieFileOrNameValueIsSentWhereItBelongs() async throws {
        let server = try FixtureServer()
        let folder = try ScratchFolders.make("fastpull-cookie-file").path
        let url = server.url("/gen/5000?seed=98&cookie=\(encoded("sid=abc"))").absoluteString
        let content = Data(FixtureContent.bytes(count: 5000, seed: 98))
        try "# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tabc\n".write(
            toFile: folder + "/mine.txt", atomically: true, encoding: .utf8)
        try ".other.test\tTRUE\t/\tFALSE\t0\tsid\tabc\n".write(
            toFile: folder + "/other.txt", atomically: true, encoding: .utf8)

        for (index, arguments) in [["-b", "mine.txt"], ["--load-cookies", "mine.txt"], ["-b", "sid=abc"]]
            .enumerated()
        {
            let result = try await CLIRunner.run([url, "-o", "\(index).bin"] + arguments, in: folder)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(FileManager.default.contents(atPath: folder + "/\(index).bin") == content)
        }
        let elsewhere = try await CLIRunner.run([url, "-o", "other.bin", "-b", "other.txt"], in: folder)
        #expect(elsewhere.status == 4, "a cookie of another domain was sent: \(elsewhere.stderr)")
    }

    @Test func badCookieInputIsAUsageError() async throws {
        let folder = try ScratchFolders.make("fastpull-cookie-usage").path
        try "127.0.0.1 FALSE / FALSE 0 sid abc\n".write(
            toFile: folder + "/spaces.txt", atomically: true, encoding: .utf8)
        for (arguments, message) in [
            (["-b", "spaces.txt"], "error: --cookie: spaces.txt line 1 is not a Netscape cookie line"),
            (["-b", "missing.txt"], "error: --cookie: cannot read 'missing.txt' (nor is it NAME=VALUE)"),
            (
                ["--no-cookies", "--cookie-jar", "j"],
                "error: --no-cookies and --cookie-jar cannot be used together"
            ),
        ] {
            let result = try await CLIRunner.run(["http://127.0.0.1:9/x"] + arguments, in: folder)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stderr.contains(message), "\(result.stderr)")
        }
    }
}
