import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP

@Suite("HTTPHeaders")
struct HTTPHeadersTests {
    @Test func lookupIsCaseInsensitiveAndReturnsTheFirstValue() {
        var headers = HTTPHeaders([(name: "Content-Type", value: "text/plain")])
        headers.add(name: "X-Dup", value: "1")
        headers.add(name: "x-dup", value: "2")
        #expect(headers["content-type"] == "text/plain")
        #expect(headers["CONTENT-TYPE"] == "text/plain")
        #expect(headers["x-DUP"] == "1")
        #expect(headers["Missing"] == nil)
        #expect(headers["Content-Typ"] == nil)
        #expect(headers["Content-Type2"] == nil)
        #expect(headers.values(for: "X-DUP") == ["1", "2"])
        #expect(headers.values(for: "missing") == [])
        #expect(headers.contains(name: "x-dup"))
        #expect(!headers.contains(name: "x-du"))
        #expect(headers.count == 3)
    }

    @Test func iteratesInInsertionOrderWithOriginalSpelling() {
        var headers = HTTPHeaders()
        #expect(headers.isEmpty)
        headers.add(name: "B", value: "2")
        headers.add(name: "a", value: "1")
        headers.add(name: "B", value: "3")
        #expect(headers.map(\.name) == ["B", "a", "B"])
        #expect(headers.map(\.value) == ["2", "1", "3"])
    }

    @Test func equalityIgnoresNameCaseButNotOrderOrValues() {
        let headers = HTTPHeaders([(name: "A", value: "1"), (name: "B", value: "2")])
        #expect(headers == HTTPHeaders([(name: "a", value: "1"), (name: "b", value: "2")]))
        #expect(headers != HTTPHeaders([(name: "B", value: "2"), (name: "A", value: "1")]))
        #expect(headers != HTTPHeaders([(name: "A", value: "1"), (name: "B", value: "X")]))
        #expect(headers != HTTPHeaders([(name: "A", value: "1")]))
        #expect(HTTPHeaders() == HTTPHeaders([]))
    }

    @Test func removeAndReplace() {
        var headers = HTTPHeaders([
            (name: "Range", value: "bytes=0-1"), (name: "X", value: "x"), (name: "range", value: "bytes=2-3"),
        ])
        headers.replaceOrAdd(name: "RANGE", value: "bytes=5-9")
        #expect(headers.map(\.name) == ["Range", "X"])
        #expect(headers.values(for: "range") == ["bytes=5-9"])
        headers.replaceOrAdd(name: "Y", value: "y")
        #expect(headers.map(\.name) == ["Range", "X", "Y"])
        headers.remove(name: "x")
        #expect(headers.map(\.name) == ["Range", "Y"])
        headers.remove(name: "absent")
        #expect(headers.count == 2)
    }

    @Test func listElementsSplitCommasAndTrimWhitespace() {
        let headers = HTTPHeaders([
            (name: "Connection", value: "keep-alive, Upgrade"),
            (name: "connection", value: " ,TE ,, \tclose\t"),
        ])
        #expect(headers.listElements(for: "Connection") == ["keep-alive", "Upgrade", "TE", "close"])
        #expect(headers.containsToken("upgrade", in: "CONNECTION"))
        #expect(headers.containsToken("CLOSE", in: "connection"))
        #expect(!headers.containsToken("keep", in: "Connection"))
        #expect(!headers.containsToken("close", in: "Other"))
        #expect(headers.listElements(for: "Other") == [])
    }

    @Test func namesEqualIsASCIICaseInsensitiveOnly() {
        #expect(HTTPHeaders.namesEqual("ETag", "etag"))
        #expect(HTTPHeaders.namesEqual("", ""))
        #expect(!HTTPHeaders.namesEqual("ETag", "ETa"))
        #expect(!HTTPHeaders.namesEqual("a", ""))
        // '@' (0x40) and '`' (0x60) differ only in the case bit but are not letters.
        #expect(!HTTPHeaders.namesEqual("@", "`"))
        #expect(!HTTPHeaders.namesEqual("[", "{"))
        #expect(!HTTPHeaders.namesEqual("\u{C9}", "\u{E9}"))
    }

    @Test func tokensAndFieldValues() {
        #expect(HTTPHeaders.isToken("X-Custom_Header.1"))
        #expect(HTTPHeaders.isToken("!#$%&'*+-.^_`|~"))
        #expect(!HTTPHeaders.isToken(""))
        #expect(!HTTPHeaders.isToken("Bad Name"))
        #expect(!HTTPHeaders.isToken("Bad:Name"))
        #expect(!HTTPHeaders.isToken("B\u{E9}"))
        #expect(!HTTPHeaders.isToken("(x)"))
        #expect(HTTPHeaders.isValidFieldValue("a value\twith tab"))
        #expect(HTTPHeaders.isValidFieldValue(""))
        #expect(HTTPHeaders.isValidFieldValue("caf\u{E9}"))
        #expect(!HTTPHeaders.isValidFieldValue(" leading"))
        #expect(!HTTPHeaders.isValidFieldValue("trailing\t"))
        #expect(!HTTPHeaders.isValidFieldValue("line\r\nbreak"))
        #expect(!HTTPHeaders.isValidFieldValue("nul\u{0}"))
        #expect(!HTTPHeaders.isValidFieldValue("del\u{7F}"))
    }
}
