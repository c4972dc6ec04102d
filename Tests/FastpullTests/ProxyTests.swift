import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP
@testable import FastpullNet

@Suite("NO_PROXY matching")
struct ProxyBypassTests {
    static let list = ProxyBypass([
        "example.com, .corp.internal,*.wild.test, 10.0.0.0/8,192.168.1.7", "[::1]:8080, fd00::/8",
        "build.local:8443",
    ])

    @Test(arguments: [
        ("example.com", 80, true),
        ("EXAMPLE.COM.", 80, true),
        ("www.example.com", 443, true),
        ("a.b.example.com", 1, true),
        ("badexample.com", 80, false),
        ("example.com.evil.net", 80, false),
        ("corp.internal", 80, true),
        ("git.corp.internal", 80, true),
        ("wild.test", 80, true),
        ("x.wild.test", 80, true),
        ("10.1.2.3", 80, true),
        ("11.1.2.3", 80, false),
        ("192.168.1.7", 80, true),
        ("192.168.1.8", 80, false),
        ("::1", 8080, true),
        ("[::1]", 8080, true),
        ("0:0:0:0:0:0:0:1", 8080, true),
        ("::1", 80, false),
        ("fd12:3456::1", 80, true),
        ("fe80::1", 80, false),
        ("build.local", 8443, true),
        ("build.local", 443, false),
        ("other.test", 80, false),
    ])
    func matches(host: String, port: Int, expected: Bool) {
        #expect(Self.list.matches(host: host, port: port) == expected)
    }

    @Test func anIPEntryDoesNotMatchANameAndANameEntryNoAddress() {
        #expect(!ProxyBypass(["127.0.0.1"]).matches(host: "localhost", port: 80))
        #expect(!ProxyBypass(["localhost"]).matches(host: "127.0.0.1", port: 80))
        #expect(ProxyBypass(["localhost"]).matches(host: "localhost", port: 80))
        #expect(ProxyBypass(["127.0.0.1:9000"]).matches(host: "127.0.0.1", port: 9000))
        #expect(!ProxyBypass(["127.0.0.1:9000"]).matches(host: "127.0.0.1", port: 9001))
    }

    @Test func starMatchesEverything() {
        #expect(ProxyBypass(["*"]).matches(host: "anything.test", port: 1))
        #expect(ProxyBypass([" foo , * "]).matches(host: "10.9.8.7", port: 1))
    }

    @Test func malformedEntriesAreIgnored() {
        let list = ProxyBypass(["", " , ,", "host:notaport", "10.0.0.0/33", "a*b", "[::1", "1.2.3.4/x"])
        #expect(list.patterns.isEmpty)
        #expect(!list.matches(host: "host", port: 80))
        #expect(ProxyBypass([]).patterns.isEmpty)
    }

    @Test func ipAddressParsing() {
        #expect(IPAddress("127.0.0.1")?.bytes == [127, 0, 0, 1])
        #expect(IPAddress("::")?.bytes == [UInt8](repeating: 0, count: 16))
        #expect(IPAddress("::ffff:1.2.3.4")?.bytes.suffix(6) == [0xFF, 0xFF, 1, 2, 3, 4])
        #expect(IPAddress("fe80::1%eth0")?.bytes.first == 0xFE)
        for bad in [
            "1.2.3", "1.2.3.256", "01.2.3.4", "1::2::3", ":::", "12345::", "1:2:3:4:5:6:7:8:9", "g::1", "",
        ] {
            #expect(IPAddress(bad) == nil, "\(bad)")
        }
    }
}

@Suite("Proxy settings")
struct ProxySettingTests {
    @Test func parsesProxyURLsAsCurlDoes() throws {
        let plain = try Proxy(parsing: "proxy.test", source: "test")
        #expect(plain.host == "proxy.test" && plain.port == 1080 && plain.authorization == nil)
        let full = try Proxy(parsing: " http://al%40ice:p%3Ass@Proxy.Test:3128/ ", source: "test")
        #expect(full.port == 3128)
        #expect(full.authorization == "Basic " + Base64.encode(Array("al@ice:p:ss".utf8)))
        #expect(full.description == "http://Proxy.Test:3128")
        let v6 = try Proxy(parsing: "http://[::1]:8888", source: "test")
        #expect(v6.host == "::1" && v6.authority == "[::1]:8888")
        let userOnly = try Proxy(parsing: "http://bob@p.test:1", source: "test")
        #expect(userOnly.authorization == "Basic " + Base64.encode(Array("bob:".utf8)))
    }

    @Test(arguments: [
        "socks4://u:secret@p.test:1080", "https://p.test", "http://", "http://p.test/path",
        "http://u:secret@p.test:99999",
    ])
    func rejectsUnusableProxyURLsWithoutShowingThePassword(text: String) {
        #expect {
            try Proxy.parsing(text, source: "https_proxy")
        } throws: { error in
            guard let error = error as? FastpullError else { return false }
            return error.code == .usage && error.message.contains("https_proxy")
                && !error.message.contains("secret")
        }
    }

    @Test func redactsUserInformation() {
        #expect(Proxy.redacted("http://u:secret@p.test:1") == "http://***@p.test:1")
        #expect(Proxy.redacted("u:se/cr@et@p.test") == "***@p.test")
        #expect(Proxy.redacted("http://p.test:1/") == "http://p.test:1/")
    }

    @Test func readsTheEnvironmentLikeCurl() throws {
        let rules = try ProxyRules(
            .environment,
            environment: [
                "http_proxy": "http://lower.test:1", "HTTP_PROXY": "http://upper.test:2",
                "HTTPS_PROXY": "upper-secure.test:3", "NO_PROXY": "skip.test", "no_proxy": "",
            ])
        #expect(rules.http?.host == "lower.test")
        #expect(rules.https?.host == "upper-secure.test" && rules.https?.port == 3)
        #expect(rules.bypass.matches(host: "skip.test", port: 80))

        let upperOnly = try ProxyRules(.environment, environment: ["HTTP_PROXY": "upper.test:2"])
        #expect(upperOnly.http?.host == "upper.test")
        #expect(upperOnly.https == nil)
        // In a CGI script HTTP_PROXY comes from the client's `Proxy:` header (httpoxy): ignored.
        let cgi = try ProxyRules(
            .environment, environment: ["HTTP_PROXY": "evil.test:2", "REQUEST_METHOD": "GET"])
        #expect(cgi.http == nil)
        let none = try ProxyRules(.environment, environment: ["http_proxy": "  ", "PATH": "/bin"])
        #expect(none == .direct)
        #expect(try ProxyRules(.none, environment: ["http_proxy": "p.test"]) == .direct)
    }

    /// `ALL_PROXY` serves either scheme that has no variable of its own (before, `ALL_PROXY` was never
    /// read); a SOCKS one there is refused like anywhere else, not passed over (it was: the download
    /// went direct).
    @Test func allProxyServesEitherSchemeWithoutItsOwn() throws {
        let all = try ProxyRules(.environment, environment: ["ALL_PROXY": "http://all.test:3128"])
        #expect(all.http?.host == "all.test" && all.https?.host == "all.test")
        let mixed = try ProxyRules(
            .environment,
            environment: ["all_proxy": "all.test:1", "ALL_PROXY": "upper.test:2", "https_proxy": "s.test:3"])
        #expect(mixed.http?.host == "all.test")
        #expect(mixed.https?.host == "s.test")
        #expect {
            try ProxyRules(.environment, environment: ["ALL_PROXY": "socks4://p.test:1080"])
        } throws: { error in
            (error as? FastpullError)?.message.contains("ALL_PROXY: 'socks4://p.test:1080' is a SOCKS4 proxy")
                == true
        }
    }

    /// A SOCKS4 proxy (every SOCKS4 scheme, any case; curl's `socks://` is SOCKS4) in whichever
    /// variable names a scheme's proxy is a usage error that names the variable and says only SOCKS5
    /// is supported, never showing the password; a SOCKS `ALL_PROXY` that both schemes' own variables
    /// outrank is not in use and stays out of the way.
    @Test(arguments: [
        ("http_proxy", "socks4://p.test:1080"), ("HTTP_PROXY", "socks4a://p.test:1080"),
        ("https_proxy", "socks4://u:secret@p.test:1080"), ("HTTPS_PROXY", "SOCKS4A://p.test:1080"),
        ("all_proxy", "socks://p.test"), ("ALL_PROXY", "socks://p.test:1080"),
    ])
    func aSOCKSProxyInAnyVariableIsRefused(variable: String, value: String) {
        #expect {
            try ProxyRules(.environment, environment: [variable: value])
        } throws: { error in
            guard let error = error as? FastpullError else { return false }
            return error.code == .usage && error.message.hasPrefix("\(variable): '")
                && error.message.contains("is a SOCKS4 proxy")
                && error.message.contains(
                    "only SOCKS5 is supported; use socks5h:// or an http:// proxy instead, or unset \(variable)"
                )
                && !error.message.contains("secret")
        }
    }

    @Test func aSOCKSAllProxyOutrankedByBothSchemesIsNotInUse() throws {
        let rules = try ProxyRules(
            .environment,
            environment: [
                "http_proxy": "h.test:1", "https_proxy": "s.test:2", "ALL_PROXY": "socks5://p.test:1080",
            ])
        #expect(rules.http?.host == "h.test" && rules.https?.host == "s.test")
        #expect(ProxySetting.isSOCKS("Socks4A://p.test") && !ProxySetting.isSOCKS("http://socks5.test"))
    }

    @Test func anUnusableEnvironmentProxyNamesTheVariable() {
        #expect {
            try ProxyRules(.environment, environment: ["https_proxy": "socks4://p.test:1080"])
        } throws: { error in
            (error as? FastpullError)?.message.contains("https_proxy") == true
        }
    }

    @Test func routesByScheme() throws {
        let rules = try ProxyRules(.url("http://p.test:3128", bypass: ["direct.test"]), environment: [:])
        let proxy = Proxy(host: "p.test", port: 3128)
        #expect(rules.route(to: Origin(URL(string: "http://a.test/x")!)!) == .forward(proxy))
        #expect(rules.route(to: Origin(URL(string: "https://a.test/x")!)!) == .tunnel(proxy))
        #expect(rules.route(to: Origin(URL(string: "https://www.direct.test/x")!)!) == .direct)
        #expect(ProxyRules.direct.route(to: Origin(URL(string: "http://a.test/")!)!) == .direct)
        let envRules = try ProxyRules(.environment, environment: ["https_proxy": "p.test:3128"])
        #expect(envRules.route(to: Origin(URL(string: "http://a.test/x")!)!) == .direct)
    }

}

@Suite("Request options")
struct RequestOptionsUnitTests {
    static let url = URL(string: "https://files.example.com/a/b.iso?sig=1")!

    static func settings(_ configure: (inout Configuration) -> Void) throws -> RequestSettings {
        var configuration = Configuration()
        configure(&configuration)
        return try RequestSettings(configuration: configuration, url: url)
    }

    static func names(_ head: RequestHead) -> [String] { head.headers.map { $0.name.lowercased() } }

    @Test func requestTargetForms() throws {
        let http = URL(string: "http://h.test:8080/p%20q?x=1#frag")!
        let origin = try #require(Origin(http))
        let proxy = Proxy(host: "p.test", port: 3128, authorization: "Basic cDpx")
        #expect(Requests.make("GET", http, origin: origin).target == "/p%20q?x=1")
        let forward = Requests.make("GET", http, origin: origin, route: .forward(proxy))
        #expect(forward.target == "http://h.test:8080/p%20q?x=1")
        #expect(forward.headers["Host"] == "h.test:8080")
        #expect(forward.headers["Proxy-Authorization"] == "Basic cDpx")
        let tunnelled = Requests.make("GET", Self.url, origin: Origin(Self.url)!, route: .tunnel(proxy))
        #expect(tunnelled.target == "/a/b.iso?sig=1")
        #expect(tunnelled.headers["Proxy-Authorization"] == nil)
        let text = String(decoding: forward.serialized(), as: UTF8.self)
        #expect(text.hasPrefix("GET http://h.test:8080/p%20q?x=1 HTTP/1.1\r\nHost: h.test:8080\r\n"))
    }

    @Test func connectRequest() throws {
        let origin = try #require(Origin(URL(string: "https://[::1]:8443/x")!))
        let proxy = Proxy(host: "p.test", port: 3128, authorization: "Basic cDpx")
        let request = Requests.connect(to: origin, through: proxy, settings: .standard)
        let text = String(decoding: request.serialized(), as: UTF8.self)
        #expect(text.hasPrefix("CONNECT [::1]:8443 HTTP/1.1\r\nHost: [::1]:8443\r\nUser-Agent: fastpull/"))
        #expect(text.contains("\r\nProxy-Authorization: Basic cDpx\r\n"))
        // Without credentials in the proxy URL, a user `Proxy-Authorization` goes in the CONNECT.
        let settings = try Self.settings {
            $0.request.headers = [Header(name: "proxy-authorization", value: "Basic eA==")]
        }
        let connect = Requests.connect(
            to: Origin(Self.url)!, through: Proxy(host: "p.test", port: 1), settings: settings)
        #expect(connect.headers["Proxy-Authorization"] == "Basic eA==")
        #expect(connect.target == "files.example.com:443")
    }

    @Test func userFieldsReplaceDefaultsAndCredentialsBecomeBasic() throws {
        let settings = try Self.settings {
            $0.request.headers = [
                Header(name: "accept", value: "application/octet-stream"),
                Header(name: "X-Token", value: " t1 "),
                Header(name: "Accept-Encoding", value: ""), Header(name: "X-Token", value: "t2"),
            ]
            $0.request.credentials = Credentials(user: "ann", password: "pw:with:colons")
            $0.request.userAgent = "builder/2"
        }
        let origin = try #require(Origin(Self.url))
        let head = Requests.make("GET", Self.url, origin: origin, range: 0...9, settings: settings)
        #expect(head.headers.values(for: "Accept") == ["application/octet-stream"])
        #expect(head.headers.values(for: "X-Token") == ["t1", "t2"])
        #expect(!head.headers.contains(name: "Accept-Encoding"))
        #expect(head.headers.values(for: "User-Agent") == ["builder/2"])
        #expect(head.headers["Authorization"] == "Basic " + Base64.encode(Array("ann:pw:with:colons".utf8)))
        #expect(head.headers["Range"] == "bytes=0-9")
        #expect(head.headers["Host"] == "files.example.com")
    }

    @Test func aUserAuthorizationWinsOverCredentialsAndAnEmptyUserAgentSendsNone() throws {
        let settings = try Self.settings {
            $0.request.headers = [Header(name: "Authorization", value: "Bearer abc")]
            $0.request.credentials = Credentials(user: "ann", password: "pw")
            $0.request.userAgent = ""
        }
        let head = Requests.make("GET", Self.url, origin: Origin(Self.url)!, settings: settings)
        #expect(head.headers.values(for: "Authorization") == ["Bearer abc"])
        #expect(!head.headers.contains(name: "User-Agent"))
    }

    @Test(arguments: [
        "https://other.example.com/a", "http://files.example.com/a", "https://files.example.com:8443/a",
    ])
    func secretsStayWithTheOriginAskedFor(elsewhere: String) throws {
        let settings = try Self.settings {
            $0.request.headers = [
                Header(name: "Authorization", value: "Bearer abc"), Header(name: "cookie", value: "s=1"),
                Header(name: "Proxy-Authorization", value: "Basic eA=="),
                Header(name: "X-Other", value: "keep"),
            ]
            $0.request.credentials = Credentials(user: "ann", password: "pw")
        }
        let other = URL(string: elsewhere)!
        let head = Requests.make("GET", other, origin: Origin(other)!, settings: settings)
        for name in ["Authorization", "Cookie", "Proxy-Authorization"] {
            #expect(!head.headers.contains(name: name), "\(name)")
        }
        #expect(head.headers["X-Other"] == "keep")
        // The same origin, spelled with another case and the default port, is trusted.
        let same = URL(string: "https://FILES.example.com:443/other")!
        let trusted = Requests.make("GET", same, origin: Origin(same)!, settings: settings)
        #expect(trusted.headers["Authorization"] == "Bearer abc" && trusted.headers["Cookie"] == "s=1")
        // Through a forward proxy to another origin, the proxy URL's own credentials still go to the proxy.
        let proxy = Proxy(host: "p.test", port: 1, authorization: "Basic cHJveHk=")
        let forwarded = Requests.make(
            "GET", other, origin: Origin(other)!, settings: settings, route: .forward(proxy))
        #expect(forwarded.headers.values(for: "Proxy-Authorization") == ["Basic cHJveHk="])
        #expect(!forwarded.headers.contains(name: "Authorization"))
    }

    @Test(arguments: ["Host", "range", "If-Range", "Content-Length", "transfer-encoding", "Connection"])
    func framingFieldsAreRefusedByName(name: String) {
        #expect {
            try Self.settings { $0.request.headers = [Header(name: name, value: "x")] }
        } throws: { error in
            guard let error = error as? FastpullError else { return false }
            return error.code == .usage && error.message.lowercased().contains("'\(name.lowercased())'")
        }
    }

    @Test func malformedFieldsAreRefusedWithoutEchoingTheValue() {
        let cases: [(inout Configuration) -> Void] = [
            { $0.request.headers = [Header(name: "Bad Name", value: "x")] },
            { $0.request.headers = [Header(name: "Authorization: Bearer secret", value: "")] },
            { $0.request.headers = [Header(name: "X-Inject", value: "secret\r\nHost: evil")] },
            { $0.request.headers = [Header(name: "", value: "x")] },
            { $0.request.userAgent = "ua\nX: y" },
            { $0.request.credentials = Credentials(user: "a:b", password: "secret") },
            { $0.request.credentials = Credentials(user: "a", password: "secret\r\n") },
        ]
        for configure in cases {
            #expect {
                try Self.settings(configure)
            } throws: { error in
                guard let error = error as? FastpullError else { return false }
                return error.code == .usage && !error.message.contains("secret")
            }
        }
    }
}

@Suite("Rate limiter")
struct RateLimiterTests {
    @Test func bookingsFollowTheRateAndDoNotSaveUpIdleTime() {
        let limiter = RateLimiter(bytesPerSecond: 1000)
        let start = ContinuousClock.now
        // 100 bytes cost 100 ms each, booked back to back.
        #expect(limiter.book(100, now: start) == start + .milliseconds(100) - RateLimiter.tolerance)
        #expect(limiter.book(100, now: start) == start + .milliseconds(200) - RateLimiter.tolerance)
        // After a long pause the schedule starts from now, not from the past.
        let later = start + .seconds(10)
        #expect(limiter.book(50, now: later) == later + .milliseconds(50) - RateLimiter.tolerance)
    }

    @Test func slicesAreAFiftiethOfTheRateWithinBounds() {
        #expect(RateLimiter(bytesPerSecond: 1 << 20).sliceBytes == (1 << 20) / 50)
        #expect(RateLimiter(bytesPerSecond: 1).sliceBytes == 256)
        #expect(RateLimiter(bytesPerSecond: 1 << 40).sliceBytes == HTTPConnection.bufferSize)
    }

    @Test func aRateBelowOneIsAUsageError() throws {
        #expect(try RateLimiter.make(nil) == nil)
        #expect(throws: FastpullError.self) { try RateLimiter.make(0) }
        #expect(throws: FastpullError.self) { try RateLimiter.make(-5) }
    }

    /// Two downloads under one overall limit share it: each booking counts in the parent, and a read
    /// waits for the later of its own and the parent's due time; the parent's rate changes at once,
    /// and 0 means no limit.
    @Test func anOverallLimitIsSharedByEveryDownloadUnderIt() throws {
        let overall = RateLimiter(bytesPerSecond: 1000)
        let first = try #require(try RateLimiter.make(1_000_000, overall: overall))
        let second = try #require(try RateLimiter.make(nil, overall: overall))
        #expect(second === overall, "a download without a limit of its own is paced by the overall one")
        let start = ContinuousClock.now
        #expect(first.book(100, now: start) == start + .milliseconds(100) - RateLimiter.tolerance)
        #expect(second.book(100, now: start) == start + .milliseconds(200) - RateLimiter.tolerance)
        #expect(first.sliceBytes == 256, "the slice follows the lowest rate")
        overall.setRate(0)
        let later = start + .seconds(10)
        #expect(second.book(1_000_000, now: later) == later, "no overall limit: no wait")
        #expect(
            first.book(1000, now: later) == later + .milliseconds(1) - RateLimiter.tolerance,
            "its own limit stays")
        #expect(first.sliceBytes == 1_000_000 / 50)
    }

    @Test func pacingStopsWhenCancelled() {
        let limiter = RateLimiter(bytesPerSecond: 1)
        #expect(throws: NetError.cancelled) {
            try limiter.pace(1000) { true }
        }
    }
}
