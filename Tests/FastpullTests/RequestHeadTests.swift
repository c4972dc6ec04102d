import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP

@Suite("RequestHead")
struct RequestHeadTests {
    @Test func serializesRequestLineHeadersAndEmptyLine() {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "example.com:8080")
        headers.add(name: "Range", value: "bytes=0-99")
        headers.add(name: "If-Range", value: "\"etag\"")
        headers.add(name: "User-Agent", value: "fastpull/1.0")
        let head = RequestHead(method: "GET", target: "/files/a.iso?sig=x%20y", headers: headers)
        let expected =
            "GET /files/a.iso?sig=x%20y HTTP/1.1\r\n" + "Host: example.com:8080\r\n" + "Range: bytes=0-99\r\n"
            + "If-Range: \"etag\"\r\n" + "User-Agent: fastpull/1.0\r\n" + "\r\n"
        #expect(head.serialized() == Array(expected.utf8))
    }

    @Test func serializesWithoutHeaders() {
        let head = RequestHead(method: "HEAD", target: "/", headers: HTTPHeaders())
        #expect(head.serialized() == Array("HEAD / HTTP/1.1\r\n\r\n".utf8))
    }

    @Test func keepsFieldOrderSpellingAndRepeats() {
        let headers = HTTPHeaders([
            (name: "x-b", value: "2"), (name: "X-A", value: "1"), (name: "x-b", value: "3"),
        ])
        let head = RequestHead(method: "GET", target: "/x", headers: headers)
        #expect(head.serialized() == Array("GET /x HTTP/1.1\r\nx-b: 2\r\nX-A: 1\r\nx-b: 3\r\n\r\n".utf8))
    }

    @Test func keepsNonASCIIValuesAsUTF8() {
        let head = RequestHead(
            method: "GET", target: "/", headers: HTTPHeaders([(name: "X", value: "caf\u{E9}")]))
        #expect(
            head.serialized() == Array("GET / HTTP/1.1\r\nX: caf".utf8) + [0xC3, 0xA9]
                + Array("\r\n\r\n".utf8))
    }

    @Test func lineBreaksCannotInjectFieldsOrSplitTheRequest() {
        let headers = HTTPHeaders([(name: "X-Evil", value: "a\r\nInjected: 1\u{0}")])
        let head = RequestHead(method: "GET", target: "/p\r\nHost: evil", headers: headers)
        let serialized = head.serialized()
        #expect(serialized == Array("GET /p  Host: evil HTTP/1.1\r\nX-Evil: a  Injected: 1 \r\n\r\n".utf8))
        // Exactly one request line, one field line and the empty line.
        #expect(serialized.filter { $0 == UInt8(ascii: "\n") }.count == 3)
    }

    @Test(arguments: [
        ("http://example.com", "/"),
        ("http://example.com/", "/"),
        ("http://example.com/a/b.iso", "/a/b.iso"),
        ("http://example.com/a%20b?x=1&y=%2F", "/a%20b?x=1&y=%2F"),
        ("https://example.com/p?", "/p?"),
        ("https://example.com?q=1", "/?q=1"),
        ("http://example.com/p#fragment", "/p"),
        ("http://example.com/a;p/b%2Fc", "/a;p/b%2Fc"),
        ("http://[::1]:8080/gen/10?seed=2", "/gen/10?seed=2"),
    ])
    func targetForURL(url: String, target: String) throws {
        let url = try #require(URL(string: url))
        #expect(RequestHead.target(for: url) == target)
    }

    @Test(arguments: [
        ("http://example.com/x", "example.com"),
        ("http://example.com:80/x", "example.com"),
        ("http://example.com:443/x", "example.com:443"),
        ("https://example.com:443/x", "example.com"),
        ("https://example.com:8443/x", "example.com:8443"),
        ("http://127.0.0.1:5000/", "127.0.0.1:5000"),
        ("http://[::1]:8080/x", "[::1]:8080"),
        ("https://[::1]/x", "[::1]"),
    ])
    func hostFieldForURL(url: String, host: String) throws {
        let url = try #require(URL(string: url))
        #expect(RequestHead.hostField(for: url) == host)
    }

    @Test func hostFieldNeedsAHost() throws {
        let url = try #require(URL(string: "file:///tmp/x"))
        #expect(RequestHead.hostField(for: url) == nil)
    }
}
