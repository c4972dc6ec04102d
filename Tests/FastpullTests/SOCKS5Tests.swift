import Foundation
import Testing

@testable import FastpullHTTP

/// The SOCKS5 messages (RFC 1928, RFC 1929) and proxy URLs, without I/O.
@Suite("SOCKS5 messages")
struct SOCKS5Tests {
    @Test func theMessagesAreTheRFCs() {
        #expect(SOCKS5.greeting(offering: false) == [5, 1, 0])
        #expect(SOCKS5.greeting(offering: true) == [5, 2, 0, 2])
        #expect(
            SOCKS5.authentication(.init(user: "al", password: "pw!")) == [1, 2, 97, 108, 3, 112, 119, 33])
        #expect(
            SOCKS5.connectRequest(to: .name("a.b"), port: 443) == [5, 1, 0, 3, 3, 97, 46, 98, 1, 187])
        #expect(
            SOCKS5.connectRequest(to: .ipv4([127, 0, 0, 1]), port: 80) == [5, 1, 0, 1, 127, 0, 0, 1, 0, 80])
        #expect(SOCKS5.replyLength([5, 0, 0, 1, 127]) == 10)
        #expect(SOCKS5.replyLength([5, 0, 0, 3, 9]) == 16)
        #expect(SOCKS5.replyLength([5, 0, 0, 4, 0]) == 22)
        #expect(SOCKS5.replyLength([4, 0, 0, 1, 0]) == nil)
        #expect(SOCKS5.replyText(5) == "connection refused")
    }

    @Test func aSOCKS5ProxyURLKeepsItsCredentialsOutOfItsDescription() throws {
        let proxy = try Proxy(parsing: "socks5h://carol:S3cret@p.test", source: "test")
        #expect(proxy.kind == .socks5h)
        #expect(proxy.port == 1080)
        #expect(proxy.socksCredentials == SOCKS5.Credentials(user: "carol", password: "S3cret"))
        #expect(proxy.authorization == nil)
        #expect(proxy.description == "socks5h://p.test:1080")
        let plain = try Proxy(parsing: "SOCKS5://p.test:9050", source: "test")
        #expect(plain.kind == .socks5 && plain.socksCredentials == nil)
        let rules = ProxyRules(http: proxy, https: proxy, bypass: ProxyBypass())
        #expect(rules.route(to: Origin(URL(string: "https://a.test/x")!)!) == .socks(proxy))
        #expect(rules.route(to: Origin(URL(string: "http://a.test/x")!)!) == .socks(proxy))
    }
}
