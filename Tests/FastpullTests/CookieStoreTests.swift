import Foundation
import Testing

@testable import FastpullHTTP

/// RFC 6265's rules as the cookie store keeps them: domain, path, Secure, expiry.
@Suite("Cookie store")
struct CookieStoreTests {
    let now: Int64 = 1_800_000_000

    @Test func aCookieGoesWhereItsDomainPathAndSecureAllow() throws {
        let store = CookieStore()
        let page = try #require(URL(string: "https://www.example.com/a/b/page"))
        store.store(setCookie: "host=1", from: page, now: now)
        store.store(setCookie: "wide=2; Domain=.example.com; Path=/", from: page, now: now)
        store.store(setCookie: "safe=3; Secure; Path=/a", from: page, now: now)
        store.store(setCookie: "foreign=4; Domain=other.com", from: page, now: now)
        store.store(setCookie: "tld=5; Domain=com", from: page, now: now)
        func header(_ text: String) -> String? { store.header(for: URL(string: text)!, now: now) }
        #expect(header("https://www.example.com/a/b/x") == "host=1; safe=3; wide=2")
        #expect(header("http://www.example.com/a/x") == "wide=2")
        #expect(header("https://cdn.example.com/") == "wide=2")
        #expect(header("https://www.example.com/ab") == "wide=2")
        #expect(header("https://other.com/") == nil)
    }

    @Test func expiryMaxAgeAndReplacement() throws {
        let store = CookieStore()
        let url = try #require(URL(string: "http://h.test/"))
        store.store(setCookie: "a=1; Max-Age=60", from: url, now: now)
        store.store(setCookie: "b=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT", from: url, now: now)
        #expect(store.header(for: url, now: now) == "a=1")
        #expect(store.header(for: url, now: now + 61) == nil)
        store.store(setCookie: "a=2", from: url, now: now)
        #expect(store.header(for: url, now: now) == "a=2")
        store.store(setCookie: "a=gone; Max-Age=0", from: url, now: now)
        #expect(store.header(for: url, now: now) == nil)
    }

    @Test func netscapeFilesRoundTrip() {
        let store = CookieStore()
        let text =
            "# comment\n.example.com\tTRUE\t/\tTRUE\t1900000000\tw\t1\n#HttpOnly_h.test\tFALSE\t/p\tFALSE\t0\th\t2\nbad line\n"
        #expect(store.load(netscape: text) == [4])
        let written = store.netscape(now: now)
        #expect(written.contains(".example.com\tTRUE\t/\tTRUE\t1900000000\tw\t1\n"))
        #expect(written.contains("#HttpOnly_h.test\tFALSE\t/p\tFALSE\t0\th\t2\n"))
        let again = CookieStore()
        #expect(again.load(netscape: written).isEmpty)
        #expect(again.all == store.all)
    }
}
