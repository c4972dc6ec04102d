import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP

@Suite("ChunkedDecoder")
struct ChunkedDecoderTests {
    /// The result of decoding a whole input in pieces: the payload and how it ended.
    struct Outcome: Equatable {
        enum End: Equatable {
            case needMore
            /// Bytes consumed from the start of the input.
            case finished(consumed: Int)
            case failed(HTTPParseError)
        }
        var payload: [UInt8]
        var end: End
    }

    struct EmitFailure: Error, Equatable {}

    static func decode(
        _ input: [UInt8], pieces: [Range<Int>], into decoder: ChunkedDecoder,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> Outcome {
        var decoder = decoder
        var payload: [UInt8] = []
        for piece in pieces {
            do {
                let progress = try input[piece].withUnsafeBytes { bytes in
                    try decoder.decode(bytes) { slice in
                        // Every slice must lie inside the bytes of this call: no copies.
                        let inside =
                            slice.count > 0 && slice.baseAddress! >= bytes.baseAddress!
                            && slice.baseAddress! + slice.count <= bytes.baseAddress! + bytes.count
                        #expect(
                            inside, "emitted slice is not a non-empty part of the input",
                            sourceLocation: sourceLocation)
                        payload.append(contentsOf: slice)
                    }
                }
                if case .finished(let consumed) = progress {
                    return Outcome(payload: payload, end: .finished(consumed: piece.lowerBound + consumed))
                }
            } catch let error as HTTPParseError {
                return Outcome(payload: payload, end: .failed(error))
            } catch {
                Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
                return Outcome(payload: payload, end: .needMore)
            }
        }
        return Outcome(payload: payload, end: .needMore)
    }

    /// Decodes `input` whole, split in two at every position, and byte by byte; expects the same
    /// payload and end from each and returns it.
    static func decode(
        _ input: [UInt8],
        maxChunkSizeLine: Int = 4096,
        maxTrailerBytes: Int = 64 * 1024,
        everySplit: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> Outcome {
        let decoder = ChunkedDecoder(maxChunkSizeLine: maxChunkSizeLine, maxTrailerBytes: maxTrailerBytes)
        let whole = decode(input, pieces: [0..<input.count], into: decoder, sourceLocation: sourceLocation)
        let splits = everySplit ? Array(0...input.count) : [0, 1, input.count / 2, input.count]
        for split in splits {
            let outcome = decode(
                input, pieces: [0..<split, split..<input.count], into: decoder, sourceLocation: sourceLocation
            )
            #expect(outcome == whole, "split at \(split)", sourceLocation: sourceLocation)
        }
        let byteByByte = decode(
            input, pieces: input.indices.map { $0..<$0 + 1 }, into: decoder, sourceLocation: sourceLocation)
        #expect(byteByByte == whole, "byte by byte", sourceLocation: sourceLocation)
        return whole
    }

    static func decode(
        _ text: String,
        maxChunkSizeLine: Int = 4096,
        maxTrailerBytes: Int = 64 * 1024,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> Outcome {
        decode(
            Array(text.utf8), maxChunkSizeLine: maxChunkSizeLine, maxTrailerBytes: maxTrailerBytes,
            sourceLocation: sourceLocation)
    }

    static func finished(_ payload: String, consumed: Int) -> Outcome {
        Outcome(payload: Array(payload.utf8), end: .finished(consumed: consumed))
    }

    // MARK: - Valid bodies

    @Test func singleChunk() {
        let body = "5\r\nhello\r\n0\r\n\r\n"
        #expect(Self.decode(body) == Self.finished("hello", consumed: body.utf8.count))
    }

    @Test func emptyBody() {
        #expect(Self.decode("0\r\n\r\n") == Self.finished("", consumed: 5))
    }

    @Test func severalChunksWithHexSizesInEitherCase() {
        let body = "a\r\n0123456789\r\nA\r\nabcdefghij\r\n1\r\n!\r\n0\r\n\r\n"
        #expect(Self.decode(body) == Self.finished("0123456789abcdefghij!", consumed: body.utf8.count))
        let mixed =
            "1A\r\n" + String(repeating: "x", count: 26) + "\r\n1a\r\n" + String(repeating: "y", count: 26)
            + "\r\nfF\r\n" + String(repeating: "z", count: 255) + "\r\n0\r\n\r\n"
        let expected =
            String(repeating: "x", count: 26) + String(repeating: "y", count: 26)
            + String(repeating: "z", count: 255)
        #expect(Self.decode(mixed) == Self.finished(expected, consumed: mixed.utf8.count))
    }

    @Test func leadingZeros() {
        let body = "0005\r\nhello\r\n000\r\n\r\n"
        #expect(Self.decode(body) == Self.finished("hello", consumed: body.utf8.count))
        // Many leading zeros do not overflow.
        let padded = String(repeating: "0", count: 40) + "1\r\nx\r\n0\r\n\r\n"
        #expect(Self.decode(padded) == Self.finished("x", consumed: padded.utf8.count))
    }

    @Test(arguments: [
        "5;name=val\r\nhello\r\n0\r\n\r\n",
        "5;a;b=\"quoted; value\"\r\nhello\r\n0;last\r\n\r\n",
        "5 ;name=val\r\nhello\r\n0\r\n\r\n",
        "5\t; name = val\r\nhello\r\n0\r\n\r\n",
        "5  \r\nhello\r\n0 \r\n\r\n",
    ])
    func chunkExtensionsAndWhitespaceAreIgnored(body: String) {
        #expect(Self.decode(body) == Self.finished("hello", consumed: body.utf8.count))
    }

    @Test func trailersAreDiscarded() {
        let body = "5\r\nhello\r\n0\r\nX-Checksum: abc\r\nExpires:\r\nY-Tab:\ta b\r\n\r\n"
        #expect(Self.decode(body) == Self.finished("hello", consumed: body.utf8.count))
    }

    @Test func bareLineFeeds() {
        let body = "5\nhello\n3;x\nabc\n0\nTrailer: t\n\n"
        #expect(Self.decode(body) == Self.finished("helloabc", consumed: body.utf8.count))
    }

    @Test func bytesAfterTheEndAreNotConsumed() {
        let body = "3\r\nabc\r\n0\r\n\r\n"
        let next = "HTTP/1.1 200 OK\r\n\r\n"
        #expect(Self.decode(body + next) == Self.finished("abc", consumed: body.utf8.count))
    }

    @Test func payloadMayContainLineEndsAndDigits() {
        let body = "7\r\n\r\n0\r\n\r\n\r\n0\r\n\r\n"
        #expect(Self.decode(body) == Self.finished("\r\n0\r\n\r\n", consumed: body.utf8.count))
    }

    @Test func largeChunkIsPassedThroughInOneSlicePerCall() throws {
        let payload = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let input = Array("186a0\r\n".utf8) + payload + Array("\r\n0\r\n\r\n".utf8)
        #expect(
            Self.decode(input, everySplit: false)
                == Outcome(payload: payload, end: .finished(consumed: input.count)))
        var decoder = ChunkedDecoder()
        var slices = 0
        let progress = try input.withUnsafeBytes { bytes in
            try decoder.decode(bytes) { _ in slices += 1 }
        }
        #expect(progress == .finished(consumed: input.count))
        #expect(slices == 1)
    }

    @Test func sizeUpToInt64MaxIsAccepted() throws {
        var decoder = ChunkedDecoder()
        var received = 0
        let progress = try Array("7fffffffffffffff\r\nabc".utf8).withUnsafeBytes { bytes in
            try decoder.decode(bytes) { received += $0.count }
        }
        #expect(progress == .needMore)
        #expect(received == 3)
    }

    @Test func decodingAfterTheEndConsumesNothing() throws {
        var decoder = ChunkedDecoder()
        let first = try Array("0\r\n\r\n".utf8).withUnsafeBytes { try decoder.decode($0) { _ in } }
        #expect(first == .finished(consumed: 5))
        #expect(decoder.isFinished)
        var emitted = false
        let again = try Array("5\r\nhello".utf8).withUnsafeBytes { bytes in
            try decoder.decode(bytes) { _ in emitted = true }
        }
        #expect(again == .finished(consumed: 0))
        #expect(!emitted)
    }

    @Test func incompleteBodiesNeedMore() {
        #expect(Self.decode("") == Outcome(payload: [], end: .needMore))
        #expect(Self.decode("5\r\nhel") == Outcome(payload: Array("hel".utf8), end: .needMore))
        #expect(Self.decode("5\r\nhello\r\n0\r\n") == Outcome(payload: Array("hello".utf8), end: .needMore))
        #expect(Self.decode("0\r\nX: y\r\n") == Outcome(payload: [], end: .needMore))
    }

    // MARK: - Malformed bodies

    @Test(arguments: [
        "\r\nhello\r\n0\r\n\r\n",
        ";ext\r\n",
        "x\r\n",
        "-5\r\n",
        "+5\r\n",
        " 5\r\n",
        "0x5\r\n",
        "5x\r\n",
        "5g\r\n",
        "1 a\r\n",
        "5\rX",
        "5;ext\rX",
        "5;bell\u{7}\r\n",
        "5;nul\u{0}\r\n",
        "5\r\nhello\r\nz\r\n",
    ])
    func badChunkSize(body: String) {
        #expect(Self.decode(body).end == .failed(.badChunkSize))
    }

    @Test(arguments: [
        "8000000000000000\r\n",
        "ffffffffffffffff\r\n",
        "10000000000000000\r\n",
        "ffffffffffffffffffffffffffffffff\r\n",
        "000000000000000000008000000000000000\r\n",
    ])
    func sizesBeyondInt64AreRejected(body: String) {
        #expect(Self.decode(body) == Outcome(payload: [], end: .failed(.badChunkSize)))
    }

    @Test(arguments: [
        "5\r\nhelloX\r\n0\r\n\r\n",
        "5\r\nhello\rX\n0\r\n\r\n",
        "5\r\nhello0\r\n\r\n",
        "5\r\nhello\r\r\n",
        "3\r\nhello\r\n0\r\n\r\n",
    ])
    func missingLineEndAfterChunkData(body: String) {
        let outcome = Self.decode(body)
        #expect(outcome.end == .failed(.badChunkTerminator))
    }

    @Test func payloadBeforeAFailureIsStillEmitted() {
        #expect(
            Self.decode("5\r\nhelloX")
                == Outcome(payload: Array("hello".utf8), end: .failed(.badChunkTerminator)))
    }

    @Test(arguments: [
        "0\r\nNoColon\r\n\r\n",
        "0\r\n: empty-name\r\n\r\n",
        "0\r\nX : space\r\n\r\n",
        "0\r\n folded: x\r\n\r\n",
        "0\r\nA: 1\r\n\tfolded\r\n\r\n",
        "0\r\nX: nul\u{0}\r\n\r\n",
        "0\r\nX: cr\rx\r\n\r\n",
        "0\r\n\rX",
        "0\r\n\r\r\n",
    ])
    func badTrailer(body: String) {
        #expect(Self.decode(body).end == .failed(.badHeaderLine))
    }

    // MARK: - Limits

    @Test func chunkSizeLineLimit() {
        // "5;abcd\r\n" is 8 bytes, line end included.
        let body = "5;abcd\r\nhello\r\n0\r\n\r\n"
        #expect(Self.decode(body, maxChunkSizeLine: 8) == Self.finished("hello", consumed: body.utf8.count))
        #expect(Self.decode(body, maxChunkSizeLine: 7) == Outcome(payload: [], end: .failed(.chunkTooLarge)))
    }

    @Test func chunkSizeLineLimitAppliesToEveryChunk() {
        let body = "5\r\nhello\r\n3;long-extension\r\nabc\r\n0\r\n\r\n"
        #expect(
            Self.decode(body, maxChunkSizeLine: 8)
                == Outcome(payload: Array("hello".utf8), end: .failed(.chunkTooLarge)))
    }

    @Test func endlessChunkSizeLineFailsAtTheDefaultLimit() throws {
        // Leading zeros never overflow, so only the line limit stops them.
        let input = [UInt8](repeating: UInt8(ascii: "0"), count: 4097)
        #expect(Self.decode(input, everySplit: false) == Outcome(payload: [], end: .failed(.chunkTooLarge)))
        #expect(
            Self.decode(Array(input.dropLast()), everySplit: false) == Outcome(payload: [], end: .needMore))
    }

    @Test func trailerLimit() {
        // "X: 12345\r\n" is 10 bytes; the final empty line does not count.
        let body = "0\r\nX: 12345\r\n\r\n"
        #expect(Self.decode(body, maxTrailerBytes: 10) == Self.finished("", consumed: body.utf8.count))
        #expect(Self.decode(body, maxTrailerBytes: 9) == Outcome(payload: [], end: .failed(.trailerTooLarge)))
        #expect(Self.decode("0\r\n\r\n", maxTrailerBytes: 0) == Self.finished("", consumed: 5))
    }

    @Test func endlessTrailerFailsAtTheDefaultLimit() {
        let input = Array("0\r\nX: ".utf8) + [UInt8](repeating: UInt8(ascii: "t"), count: 64 * 1024)
        #expect(Self.decode(input, everySplit: false) == Outcome(payload: [], end: .failed(.trailerTooLarge)))
    }

    @Test func errorsAreSticky() {
        var decoder = ChunkedDecoder()
        #expect(throws: HTTPParseError.badChunkSize) {
            _ = try Array("zz\r\n".utf8).withUnsafeBytes { try decoder.decode($0) { _ in } }
        }
        #expect(throws: HTTPParseError.badChunkSize) {
            _ = try Array("0\r\n\r\n".utf8).withUnsafeBytes { try decoder.decode($0) { _ in } }
        }
    }

    @Test func errorsFromEmitAreRethrown() {
        var decoder = ChunkedDecoder()
        #expect(throws: EmitFailure()) {
            _ = try Array("5\r\nhello\r\n0\r\n\r\n".utf8).withUnsafeBytes { bytes in
                try decoder.decode(bytes) { _ in throw EmitFailure() }
            }
        }
    }
}
