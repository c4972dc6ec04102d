import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP

@Suite("Redirect")
struct RedirectTests {
    @Test func redirectStatuses() {
        let redirects = (100...599).filter(Redirect.isRedirect)
        #expect(redirects == [301, 302, 303, 307, 308])
    }

    static let base = "https://example.com:8443/a/b/c?q=1#frag"

    @Test(arguments: [
        ("http://other.example/x", "http://other.example/x"),
        ("https://other.example:9000/x?y=1", "https://other.example:9000/x?y=1"),
        ("//cdn.example/y?z", "https://cdn.example/y?z"),
        ("//cdn.example:81", "https://cdn.example:81"),
        ("/abs/p", "https://example.com:8443/abs/p"),
        ("/", "https://example.com:8443/"),
        ("rel", "https://example.com:8443/a/b/rel"),
        ("./rel", "https://example.com:8443/a/b/rel"),
        ("../up", "https://example.com:8443/a/up"),
        ("../../../../x", "https://example.com:8443/x"),
        ("/a/./b/../c", "https://example.com:8443/a/c"),
        ("?only=query", "https://example.com:8443/a/b/c?only=query"),
        ("x?y#z", "https://example.com:8443/a/b/x?y#z"),
        ("/p#", "https://example.com:8443/p#"),
        ("#other", "https://example.com:8443/a/b/c?q=1#other"),
        ("HTTP://Up.Example/X", "http://Up.Example/X"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("/a%20b", "https://example.com:8443/a%20b"),
        ("  /trimmed  ", "https://example.com:8443/trimmed"),
        ("/with space", "https://example.com:8443/with%20space"),
        ("/caf\u{E9}", "https://example.com:8443/caf%C3%A9"),
    ])
    func resolvesReferences(location: String, expected: String) throws {
        let base = try #require(URL(string: Self.base))
        let resolved = try #require(Redirect.resolve(location: location, against: base))
        #expect(resolved.absoluteString == expected)
        #expect(resolved.baseURL == nil)
    }

    @Test func dropsTheBaseFragmentUnlessLocationHasOne() throws {
        let base = try #require(URL(string: Self.base))
        let plain = try #require(Redirect.resolve(location: "/next", against: base))
        #expect(plain.fragment == nil)
        let own = try #require(Redirect.resolve(location: "/next#part", against: base))
        #expect(own.fragment == "part")
    }

    @Test func schemeRelativeKeepsTheBaseScheme() throws {
        let http = try #require(URL(string: "http://a.example/x"))
        #expect(
            Redirect.resolve(location: "//b.example/y", against: http)?.absoluteString == "http://b.example/y"
        )
    }

    @Test(arguments: [
        "",
        "   ",
        "ftp://files.example/x",
        "file:///etc/passwd",
        "mailto:someone@example.com",
        "javascript:alert(1)",
        "data:text/plain,hi",
        "http://",
        "http:///path-without-host",
        "http:relative-without-authority",
        "https://bad host/",
        "/tab\tinside",
        "/nul\u{0}inside",
        "/newline\ninside",
    ])
    func rejectsUnusableLocations(location: String) throws {
        let base = try #require(URL(string: Self.base))
        #expect(Redirect.resolve(location: location, against: base) == nil)
    }
}
