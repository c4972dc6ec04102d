import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP

@Suite("ResponseHeadParser")
struct ResponseHeadParserTests {
    /// The result of feeding a whole input, in pieces; `consumed` counts from the start of the input.
    enum Outcome: Equatable {
        case needMore
        case complete(ResponseHead, consumed: Int)
        case failed(HTTPParseError)
    }

    static func feed(
        _ input: [UInt8], pieces: [Range<Int>], into parser: ResponseHeadParser
    ) -> Outcome {
        var parser = parser
        for piece in pieces {
            let result = input[piece].withUnsafeBytes { bytes in
                Result { () throws(HTTPParseError) in try parser.feed(bytes) }
            }
            switch result {
            case .success(.needMore):
                continue
            case .success(.complete(let head, let consumed)):
                return .complete(head, consumed: piece.lowerBound + consumed)
            case .failure(let error):
                return .failed(error)
            }
        }
        return .needMore
    }

    /// Feeds `input` whole, split in two at every position, and byte by byte; expects the same outcome
    /// from each and returns it.
    static func parse(
        _ input: [UInt8],
        maxHeadBytes: Int = 64 * 1024,
        maxHeaderCount: Int = 256,
        everySplit: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> Outcome {
        let parser = ResponseHeadParser(maxHeadBytes: maxHeadBytes, maxHeaderCount: maxHeaderCount)
        let whole = feed(input, pieces: [0..<input.count], into: parser)
        let splits =
            everySplit ? Array(0...input.count) : [0, 1, input.count / 2, input.count - 1, input.count]
        for split in splits where split >= 0 && split <= input.count {
            let outcome = feed(input, pieces: [0..<split, split..<input.count], into: parser)
            #expect(outcome == whole, "split at \(split)", sourceLocation: sourceLocation)
        }
        if everySplit {
            let outcome = feed(input, pieces: input.indices.map { $0..<$0 + 1 }, into: parser)
            #expect(outcome == whole, "byte by byte", sourceLocation: sourceLocation)
        }
        return whole
    }

    static func parse(
        _ text: String,
        maxHeadBytes: Int = 64 * 1024,
        maxHeaderCount: Int = 256,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> Outcome {
        parse(
            Array(text.utf8), maxHeadBytes: maxHeadBytes, maxHeaderCount: maxHeaderCount,
            sourceLocation: sourceLocation)
    }

    static func head(
        _ outcome: Outcome, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> (head: ResponseHead, consumed: Int) {
        guard case .complete(let head, let consumed) = outcome else {
            Issue.record("expected a complete head, got \(outcome)", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        return (head, consumed)
    }

    // MARK: - Valid heads

    @Test func parsesStatusLineHeadersAndLeavesTheBody() throws {
        let headText = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: \"abc\"\r\nAccept-Ranges: bytes\r\n\r\n"
        let (head, consumed) = try Self.head(Self.parse(headText + "hello"))
        #expect(consumed == headText.utf8.count)
        #expect(head.versionMajor == 1)
        #expect(head.versionMinor == 1)
        #expect(head.status == 200)
        #expect(head.reason == "OK")
        #expect(head.headers["content-length"] == "5")
        #expect(head.headers["ETAG"] == "\"abc\"")
        #expect(head.headers.count == 3)
        #expect(head.contentLength == 5)
        #expect(!head.isChunked)
        #expect(head.keepAlive)
        let expected = HTTPHeaders([
            (name: "Content-Length", value: "5"), (name: "ETag", value: "\"abc\""),
            (name: "Accept-Ranges", value: "bytes"),
        ])
        #expect(head.headers == expected)
    }

    @Test func acceptsBareLineFeeds() throws {
        let text = "HTTP/1.1 206 Partial Content\nContent-Range: bytes 0-4/10\nContent-Length: 5\n\n"
        let (head, consumed) = try Self.head(Self.parse(text + "01234"))
        #expect(consumed == text.utf8.count)
        #expect(head.status == 206)
        #expect(head.reason == "Partial Content")
        #expect(head.headers["Content-Range"] == "bytes 0-4/10")
    }

    @Test func acceptsMixedLineEnds() throws {
        let text = "HTTP/1.1 200 OK\nA: 1\r\nB: 2\n\r\n"
        let (head, consumed) = try Self.head(Self.parse(text))
        #expect(consumed == text.utf8.count)
        #expect(head.headers.values(for: "a") == ["1"])
        #expect(head.headers.values(for: "b") == ["2"])
    }

    @Test(arguments: ["HTTP/1.1 204\r\n\r\n", "HTTP/1.1 204 \r\n\r\n"])
    func reasonMayBeEmpty(text: String) throws {
        let (head, _) = try Self.head(Self.parse(text))
        #expect(head.status == 204)
        #expect(head.reason == "")
        #expect(head.headers.isEmpty)
    }

    @Test func reasonKeepsSpacesTabsAndObsText() throws {
        var bytes = Array("HTTP/1.1 404 Not \tFound ".utf8)
        bytes.append(0xE9)  // ISO-8859-1 'é', not valid UTF-8
        bytes.append(contentsOf: "\r\n\r\n".utf8)
        let (head, _) = try Self.head(Self.parse(bytes))
        #expect(head.reason == "Not \tFound \u{E9}")
    }

    @Test func statusCodesAcrossTheRange() throws {
        for status in [100, 101, 103, 200, 299, 301, 404, 599, 999] {
            let (head, _) = try Self.head(Self.parse("HTTP/1.1 \(status) X\r\n\r\n"))
            #expect(head.status == status)
        }
    }

    @Test func higherMinorVersionIsAccepted() throws {
        let (head, _) = try Self.head(Self.parse("HTTP/1.2 200 OK\r\n\r\n"))
        #expect(head.versionMajor == 1)
        #expect(head.versionMinor == 2)
    }

    @Test func trimsOptionalWhitespaceAroundValues() throws {
        let text = "HTTP/1.1 200 OK\r\nA:   spaced  out \t\r\nB:\tx\r\nC:\r\nD: \r\nE:no-space\r\n\r\n"
        let (head, _) = try Self.head(Self.parse(text))
        #expect(head.headers["A"] == "spaced  out")
        #expect(head.headers["B"] == "x")
        #expect(head.headers["C"] == "")
        #expect(head.headers["D"] == "")
        #expect(head.headers["E"] == "no-space")
    }

    @Test func valueMayContainColonsAndObsText() throws {
        var bytes = Array("HTTP/1.1 200 OK\r\nLocation: http://h:8080/a?b=c:d\r\nX-Latin: caf".utf8)
        bytes.append(0xE9)
        bytes.append(contentsOf: "\r\nX-Utf8: caf\u{E9}\r\n\r\n".utf8)
        let (head, _) = try Self.head(Self.parse(bytes))
        #expect(head.headers["location"] == "http://h:8080/a?b=c:d")
        #expect(head.headers["x-latin"] == "caf\u{E9}")
        #expect(head.headers["x-utf8"] == "caf\u{E9}")
    }

    @Test func headerNamesMayUseEveryTokenCharacter() throws {
        let name = "!#$%&'*+-.^_`|~09azAZ"
        let (head, _) = try Self.head(Self.parse("HTTP/1.1 200 OK\r\n\(name): v\r\n\r\n"))
        #expect(head.headers[name] == "v")
    }

    @Test func repeatedFieldsAreKeptInOrder() throws {
        let text = "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nX: y\r\nset-cookie: b=2\r\n\r\n"
        let (head, _) = try Self.head(Self.parse(text))
        #expect(head.headers.values(for: "Set-Cookie") == ["a=1", "b=2"])
        #expect(head.headers["SET-COOKIE"] == "a=1")
        #expect(head.headers.map(\.name) == ["Set-Cookie", "X", "set-cookie"])
    }

    @Test func parserResetsAfterEachHead() throws {
        let interim = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
        let final = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
        let input = Array((interim + final + "hi").utf8)
        var parser = ResponseHeadParser()
        let first = try input.withUnsafeBytes { try parser.feed($0) }
        guard case .complete(let hints, let consumed) = first else {
            Issue.record("expected the 103 head, got \(first)")
            return
        }
        #expect(hints.status == 103)
        #expect(consumed == interim.utf8.count)
        let second = try input[consumed...].withUnsafeBytes { try parser.feed($0) }
        guard case .complete(let ok, let consumed2) = second else {
            Issue.record("expected the 200 head, got \(second)")
            return
        }
        #expect(ok.status == 200)
        #expect(ok.contentLength == 2)
        #expect(ok.headers.count == 1)
        #expect(consumed2 == final.utf8.count)
    }

    @Test func emptyInputNeedsMore() throws {
        var parser = ResponseHeadParser()
        let progress = try [UInt8]().withUnsafeBytes { try parser.feed($0) }
        #expect(progress == .needMore)
        #expect(Self.parse("HTTP/1.1 200 OK\r\nA: b\r\n") == .needMore)
        #expect(Self.parse("HTTP/1.1 200 OK\r\nA: b\r\n\r") == .needMore)
    }

    // MARK: - Content-Length, Transfer-Encoding, Connection

    @Test(arguments: [
        ("Content-Length: 0", Int64(0)),
        ("Content-Length: 42", 42),
        ("Content-Length: 0042", 42),
        ("Content-Length: 9223372036854775807", Int64.max),
        ("Content-Length: 7\r\nContent-Length: 7", 7),
        ("Content-Length: 7, 7", 7),
        ("Content-Length: 7,7\r\ncontent-length: 7", 7),
    ])
    func contentLength(fields: String, expected: Int64) throws {
        let (head, _) = try Self.head(Self.parse("HTTP/1.1 200 OK\r\n\(fields)\r\n\r\n"))
        #expect(head.contentLength == expected)
    }

    @Test func contentLengthIsNilWhenAbsent() throws {
        let (head, _) = try Self.head(Self.parse("HTTP/1.1 200 OK\r\nX: 1\r\n\r\n"))
        #expect(head.contentLength == nil)
    }

    @Test(arguments: [
        "Content-Length: abc",
        "Content-Length: -1",
        "Content-Length: +5",
        "Content-Length:",
        "Content-Length: 0x10",
        "Content-Length: 1 2",
        "Content-Length: 1.0",
        "Content-Length: 5, 6",
        "Content-Length: 5,,5",
        "Content-Length: 5,",
        "Content-Length: 5\r\nContent-Length: 6",
        "Content-Length: 5\r\nContent-Length: ",
        "Content-Length: 9223372036854775808",
        "Content-Length: 99999999999999999999999",
    ])
    func invalidContentLength(fields: String) {
        #expect(Self.parse("HTTP/1.1 200 OK\r\n\(fields)\r\n\r\n") == .failed(.badContentLength))
    }

    @Test(arguments: [
        "Transfer-Encoding: chunked\r\nContent-Length: 10",
        "Content-Length: 10\r\nTransfer-Encoding: chunked",
        "Transfer-Encoding: chunked\r\nContent-Length: nonsense",
        "Transfer-Encoding: chunked\r\nContent-Length: 1\r\nContent-Length: 2",
    ])
    func transferEncodingOverridesContentLength(fields: String) throws {
        let (head, _) = try Self.head(Self.parse("HTTP/1.1 200 OK\r\n\(fields)\r\n\r\n"))
        #expect(head.isChunked)
        #expect(head.contentLength == nil)
    }

    @Test(arguments: [
        ("Transfer-Encoding: chunked", true),
        ("Transfer-Encoding: Chunked", true),
        ("Transfer-Encoding: gzip, chunked", true),
        ("Transfer-Encoding: gzip,chunked ", true),
        ("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked", true),
        ("Transfer-Encoding: chunked, gzip", false),
        ("Transfer-Encoding: gzip", false),
        ("Transfer-Encoding: chunkedx", false),
        ("X-Transfer-Encoding: chunked", false),
    ])
    func chunkedWhenLastCodingIsChunked(fields: String, chunked: Bool) throws {
        let (head, _) = try Self.head(Self.parse("HTTP/1.1 200 OK\r\n\(fields)\r\n\r\n"))
        #expect(head.isChunked == chunked)
    }

    @Test(arguments: [
        ("HTTP/1.1", "", true),
        ("HTTP/1.1", "Connection: keep-alive", true),
        ("HTTP/1.1", "Connection: close", false),
        ("HTTP/1.1", "Connection: Close", false),
        ("HTTP/1.1", "Connection: Upgrade, close", false),
        ("HTTP/1.1", "Connection: keep-alive\r\nConnection: close", false),
        ("HTTP/1.1", "Connection: closed", true),
        ("HTTP/1.0", "", false),
        ("HTTP/1.0", "Connection: keep-alive", true),
        ("HTTP/1.0", "Connection: Keep-Alive", true),
        ("HTTP/1.0", "Connection: keep-alive, Upgrade", true),
        ("HTTP/1.0", "Connection: Upgrade,keep-alive", true),
        ("HTTP/1.0", "Connection: keep-alive, close", false),
        ("HTTP/1.0", "Keep-Alive: timeout=5", false),
    ])
    func keepAlive(version: String, fields: String, keepAlive: Bool) throws {
        let headerLine = fields.isEmpty ? "" : fields + "\r\n"
        let (head, _) = try Self.head(Self.parse("\(version) 200 OK\r\n\(headerLine)\r\n"))
        #expect(head.keepAlive == keepAlive)
    }

    // MARK: - Malformed status lines

    @Test(arguments: [
        "HTTP/2 200\r\n\r\n",
        "HTTP/2.0 200 OK\r\n\r\n",
        "HTTP/3 200 OK\r\n\r\n",
        "HTTP/0.9 200 OK\r\n\r\n",
        "HTTP/2\r\n\r\n",
    ])
    func otherVersionsAreUnsupported(text: String) {
        #expect(Self.parse(text) == .failed(.unsupportedVersion))
    }

    @Test(arguments: [
        "ICY 200 OK\r\n\r\n",
        "http/1.1 200 OK\r\n\r\n",
        "HTTP 200 OK\r\n\r\n",
        "HTTP/1 200 OK\r\n\r\n",
        "HTTP/1. 200 OK\r\n\r\n",
        "HTTP/1.x 200 OK\r\n\r\n",
        "HTTP/1.10 200 OK\r\n\r\n",
        "HTTP/12 200 OK\r\n\r\n",
        "HTTP/1.1\r\n\r\n",
        "HTTP/1.1 \r\n\r\n",
        "HTTP/1.1  200 OK\r\n\r\n",
        "HTTP/1.1 20 OK\r\n\r\n",
        "HTTP/1.1 2000 OK\r\n\r\n",
        "HTTP/1.1 20x OK\r\n\r\n",
        "HTTP/1.1 099 Low\r\n\r\n",
        "HTTP/1.1 -20 OK\r\n\r\n",
        "HTTP/1.1 200\tOK\r\n\r\n",
        "HTTP/1.1 200 O\u{0}K\r\n\r\n",
        "HTTP/1.1 200 OK\r\r\n\r\n",
        "HTTP/1.1 200 O\rK\r\n\r\n",
        " HTTP/1.1 200 OK\r\n\r\n",
        "\r\nHTTP/1.1 200 OK\r\n\r\n",
        "\nHTTP/1.1 200 OK\r\n\r\n",
        "HTTP/1.1\t200 OK\r\n\r\n",
        "<html>hello</html>",
    ])
    func badStatusLine(text: String) {
        #expect(Self.parse(text) == .failed(.badStatusLine))
    }

    /// RFC 9112 §5.2: a user agent replaces an obs-fold with a space. Control characters other than NUL
    /// and CR in a value (or a reason phrase) are kept, as curl and aria2 do.
    @Test func foldedLinesJoinAndOddControlBytesAreKept() throws {
        let (head, _) = try Self.head(
            Self.parse(
                "HTTP/1.1 200 O\u{7F}K\r\nA: 1\r\n folded\r\n\tand again\r\nX: bell\u{7}\r\nY: del\u{7F}\r\n\r\n"
            ))
        #expect(head.headers["A"] == "1 folded and again")
        #expect(head.headers["X"] == "bell\u{7}")
        #expect(head.headers["Y"] == "del\u{7F}")
        #expect(head.reason == "O\u{7F}K")
        // A continuation with nothing to continue is still malformed.
        #expect(Self.parse("HTTP/1.1 200 OK\r\n folded\r\n\r\n") == .failed(.badHeaderLine))
    }

    @Test func nonHTTPPeerFailsOnItsFirstBytes() {
        // No line end and far below the limit: the first byte already rules out a status line.
        #expect(Self.parse("SSH-2.0-OpenSSH_9.2") == .failed(.badStatusLine))
        #expect(Self.parse("HTTP") == .needMore)
        #expect(Self.parse("HTTX") == .failed(.badStatusLine))
    }

    // MARK: - Malformed header lines

    @Test(arguments: [
        "NoColon",
        ": empty-name",
        "Name : space-before-colon",
        "Name\t: tab-before-colon",
        " Leading: space",
        "\tLeading: tab",
        "Na(me: paren",
        "Na\"me: quote",
        "Na/me: slash",
        "N\u{E9}: non-ascii",
        "X: nul\u{0}inside",
        "X: cr\rinside",
        "X: y\r",
    ])
    func badHeaderLine(fields: String) {
        #expect(Self.parse("HTTP/1.1 200 OK\r\n\(fields)\r\n\r\n") == .failed(.badHeaderLine))
    }

    @Test func carriageReturnNotFollowedByLineFeedAtTheEnd() {
        #expect(Self.parse("HTTP/1.1 200 OK\r\n\rX\r\n\r\n") == .failed(.badHeaderLine))
        #expect(Self.parse("HTTP/1.1 200 OK\r\n\r\r\n") == .failed(.badHeaderLine))
    }

    // MARK: - Limits

    @Test func headOfExactlyTheLimitIsAccepted() throws {
        let text = "HTTP/1.1 200 OK\r\nX: abcdefgh\r\n\r\n"
        let size = text.utf8.count
        let (head, consumed) = try Self.head(Self.parse(text + "body", maxHeadBytes: size))
        #expect(consumed == size)
        #expect(head.headers["X"] == "abcdefgh")
        #expect(Self.parse(text + "body", maxHeadBytes: size - 1) == .failed(.headTooLarge))
    }

    @Test func headTooLargeWithoutAnyLineEnd() {
        let text = "HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 100)
        #expect(Self.parse(text, maxHeadBytes: 64) == .failed(.headTooLarge))
        // Exactly at the limit it still waits for more; the next byte fails.
        let prefix = Array(text.utf8.prefix(64))
        #expect(Self.parse(prefix, maxHeadBytes: 64) == .needMore)
        #expect(Self.parse(prefix + [UInt8(ascii: "a")], maxHeadBytes: 64) == .failed(.headTooLarge))
    }

    @Test func headTooLargeFailsOnTheFirstOversizedFeed() throws {
        // One megabyte in a single feed with no line end fails at once, without buffering it.
        var input = Array("HTTP/1.1 200 OK\r\nX-Big: ".utf8)
        input.append(contentsOf: repeatElement(UInt8(ascii: "a"), count: 1 << 20))
        var parser = ResponseHeadParser()
        #expect(throws: HTTPParseError.headTooLarge) {
            _ = try input.withUnsafeBytes { try parser.feed($0) }
        }
        // The failure is sticky.
        #expect(throws: HTTPParseError.headTooLarge) {
            _ = try Array("\r\n\r\n".utf8).withUnsafeBytes { try parser.feed($0) }
        }
    }

    @Test func defaultHeadLimitIs64KiB() throws {
        let start = "HTTP/1.1 200 OK\r\nX: "
        let end = "\r\n\r\n"
        let fill = 64 * 1024 - start.utf8.count - end.utf8.count
        let exact = Array((start + String(repeating: "v", count: fill) + end).utf8)
        #expect(exact.count == 64 * 1024)
        let (head, consumed) = try Self.head(Self.parse(exact, everySplit: false))
        #expect(consumed == exact.count)
        #expect(head.headers["X"]?.utf8.count == fill)
        let over = Array((start + String(repeating: "v", count: fill + 1) + end).utf8)
        #expect(Self.parse(over, everySplit: false) == .failed(.headTooLarge))
    }

    @Test func headerCountLimit() throws {
        let fields = (0..<5).map { "H\($0): \($0)\r\n" }.joined()
        let text = "HTTP/1.1 200 OK\r\n" + fields + "\r\n"
        let (head, _) = try Self.head(Self.parse(text, maxHeaderCount: 5))
        #expect(head.headers.count == 5)
        #expect(Self.parse(text, maxHeaderCount: 4) == .failed(.tooManyHeaders))
        let (empty, _) = try Self.head(Self.parse("HTTP/1.1 200 OK\r\n\r\n", maxHeaderCount: 0))
        #expect(empty.headers.isEmpty)
    }

    @Test func tooManyHeadersFailsBeforeTheHeadEnds() {
        // The limit is hit on the third complete field line, before the empty line arrives.
        #expect(
            Self.parse("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n", maxHeaderCount: 2)
                == .failed(.tooManyHeaders))
    }

    @Test func defaultHeaderCountIs256() throws {
        let fields = (0..<256).map { "H\($0): v\r\n" }.joined()
        let (head, _) = try Self.head(
            Self.parse(Array(("HTTP/1.1 200 OK\r\n" + fields + "\r\n").utf8), everySplit: false))
        #expect(head.headers.count == 256)
        let more = Array(("HTTP/1.1 200 OK\r\n" + fields + "One: more\r\n\r\n").utf8)
        #expect(Self.parse(more, everySplit: false) == .failed(.tooManyHeaders))
    }

    @Test func errorsAreSticky() {
        var parser = ResponseHeadParser()
        #expect(throws: HTTPParseError.unsupportedVersion) {
            _ = try Array("HTTP/2 200\r\n".utf8).withUnsafeBytes { try parser.feed($0) }
        }
        #expect(throws: HTTPParseError.unsupportedVersion) {
            _ = try Array("HTTP/1.1 200 OK\r\n\r\n".utf8).withUnsafeBytes { try parser.feed($0) }
        }
    }
}
