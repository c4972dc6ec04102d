import FastpullFixtures
import Foundation
import Testing

/// SOCKS5 proxies (`socks5h://`, `socks5://`) in `--proxy` and the environment, with and without a
/// user name and password, through a SOCKS5 server the test starts.
@Suite("fastpull through a SOCKS5 proxy")
struct SOCKSCLITests {
    let names = ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]
    let size = 1 << 20

    /// The test's environment without its proxy variables, plus `extra`.
    func environment(_ extra: [String: String] = [:]) -> [String: String] {
        Dictionary(uniqueKeysWithValues: names.map { ($0, "") }).merging(extra) { $1 }
    }

    @Test func socks5hGivesTheNameAndSocks5TheAddressOverHTTPAndHTTPS() async throws {
        let proxy = try SOCKS5Server()
        let server = try FixtureServer()
        var secure = FixtureServer.Configuration()
        secure.tls = true
        let tls = try FixtureServer(secure)
        let folder = try ScratchFolders.make("fastpull-socks").path
        let content = Data(FixtureContent.bytes(count: size, seed: 95))
        let path = "/gen/\(size)?seed=95"

        let named = try await CLIRunner.run(
            [
                "http://localhost:\(server.port)\(path)", "-o", "a.bin", "--proxy",
                "socks5h://127.0.0.1:\(proxy.port)",
            ],
            in: folder, environment: environment())
        #expect(named.status == 0, "\(named.stderr)")
        #expect(FileManager.default.contents(atPath: folder + "/a.bin") == content)
        #expect(!proxy.requests.isEmpty)
        #expect(Set(proxy.requests) == ["name localhost:\(server.port)"], "\(proxy.requests)")
        #expect(server.stats.bodyBytesSent >= Int64(size))

        // socks5://: this side resolves (here IPv4 only, as -4 says) and gives the address.
        let addressed = try await CLIRunner.run(
            ["http://localhost:\(server.port)\(path)", "-o", "b.bin", "-4"], in: folder,
            environment: environment(["ALL_PROXY": "socks5://127.0.0.1:\(proxy.port)"]))
        #expect(addressed.status == 0, "\(addressed.stderr)")
        #expect(FileManager.default.contents(atPath: folder + "/b.bin") == content)
        #expect(proxy.requests.contains("ipv4 127.0.0.1:\(server.port)"), "\(proxy.requests)")

        // HTTPS: TLS with the origin inside the tunnel, its name verified.
        let https = try await CLIRunner.run(
            [
                "https://localhost:\(tls.port)\(path)", "-o", "c.bin", "--cacert",
                FixturePaths.certificatesDirectory + "/ca.pem",
            ], in: folder, environment: environment(["https_proxy": "socks5h://127.0.0.1:\(proxy.port)"]))
        #expect(https.status == 0, "\(https.stderr)")
        #expect(FileManager.default.contents(atPath: folder + "/c.bin") == content)
        #expect(proxy.requests.contains("name localhost:\(tls.port)"), "\(proxy.requests)")
    }

    @Test func aProxyThatWantsCredentialsGetsThemAndWrongOnesFailAtOnce() async throws {
        let proxy = try SOCKS5Server(credentials: ("carol", "S3cret"))
        let server = try FixtureServer()
        let folder = try ScratchFolders.make("fastpull-socks-auth").path
        let url = server.url("/gen/5000?seed=96").absoluteString

        let good = try await CLIRunner.run(
            [url, "-o", "a.bin", "--proxy", "socks5h://carol:S3cret@127.0.0.1:\(proxy.port)"], in: folder,
            environment: environment())
        #expect(good.status == 0, "\(good.stderr)")
        #expect(
            FileManager.default.contents(atPath: folder + "/a.bin")
                == Data(FixtureContent.bytes(count: 5000, seed: 96)))

        let none = try await CLIRunner.run(
            [url, "-o", "b.bin", "--proxy", "socks5h://127.0.0.1:\(proxy.port)"], in: folder,
            environment: environment())
        #expect(none.status == 3, "\(none.stderr)")
        #expect(
            none.stderr.contains(
                "socks5h://127.0.0.1:\(proxy.port) wants credentials: give them in the proxy URL, socks5h://USER:PASSWORD@127.0.0.1:\(proxy.port)"
            ), "\(none.stderr)")
        #expect(!none.stderr.contains("retrying"), "\(none.stderr)")

        let wrong = try await CLIRunner.run(
            [url, "-o", "c.bin"], in: folder,
            environment: environment(["ALL_PROXY": "socks5h://carol:wrong@127.0.0.1:\(proxy.port)"]))
        #expect(wrong.status == 3, "\(wrong.stderr)")
        #expect(
            wrong.stderr.contains("socks5h://127.0.0.1:\(proxy.port) refused the user name and password"),
            "\(wrong.stderr)")
        #expect(!wrong.stderr.contains("wrong"), "the password was shown: \(wrong.stderr)")
        #expect(proxy.requests.filter { $0 == "refused" }.count == 1, "\(proxy.requests)")
    }

    @Test func anOriginTheProxyCannotReachOrAProxyNotThereIsANetworkError() async throws {
        let proxy = try SOCKS5Server()
        let folder = try ScratchFolders.make("fastpull-socks-refused").path
        let closed = try LoopbackPort.free()
        let refused = try await CLIRunner.run(
            ["http://127.0.0.1:\(closed)/x", "-o", "x", "--proxy", "socks5h://127.0.0.1:\(proxy.port)"],
            in: folder, environment: environment())
        #expect(refused.status == 3, "\(refused.stderr)")
        #expect(
            refused.stderr.contains(
                "could not connect to 127.0.0.1:\(closed): through socks5h://127.0.0.1:\(proxy.port): connection refused"
            ),
            "\(refused.stderr)")

        let absent = try LoopbackPort.free()
        let noProxy = try await CLIRunner.run(
            ["http://127.0.0.1:\(closed)/x", "-o", "x", "--proxy", "socks5://127.0.0.1:\(absent)"],
            in: folder,
            environment: environment())
        #expect(noProxy.status == 3, "\(noProxy.stderr)")
        #expect(
            noProxy.stderr.contains("could not reach the proxy socks5://127.0.0.1:\(absent)"),
            "\(noProxy.stderr)")
    }
}
