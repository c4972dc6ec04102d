// libFuzzer target: ResponseHeadParser (with HTTPHeaders and ResponseHead).
//
// Input: one configuration byte (limits and split seed), then a byte stream of response heads. The
// stream is parsed whole, byte by byte and in pseudo-random pieces, head after head (as on a
// keep-alive connection); the three runs must agree exactly, and every head must respect the limits
// and the field syntax the parser promises.

private let headLimits = [1, 16, 64, 256, 1024, 4096, 64 * 1024, 64 * 1024]
private let headerCounts = [0, 2, 16, 256]

private enum Event: Equatable {
    case head(ResponseHead, end: Int)
    case failed(HTTPParseError)
}

/// libFuzzer's entry point: runs one input; a violated invariant stops the process.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResponseHead(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = fuzzInput(data, size)
    guard let config = input.first else { return 0 }
    let stream = UnsafeRawBufferPointer(rebasing: input[1...])
    let maxHeadBytes = headLimits[Int(config & 0x07)]
    let maxHeaderCount = headerCounts[Int((config >> 3) & 0x03)]
    let seed = UInt64(config >> 5) &* 0x1_0000 &+ UInt64(size)

    var reference: [Event]?
    for split in Split.allCases {
        let events = parse(
            stream, pieces: split.pieces(count: stream.count, seed: seed), maxHeadBytes: maxHeadBytes,
            maxHeaderCount: maxHeaderCount)
        if let reference {
            require(events == reference, "\(split) split gave \(events), whole input gave \(reference)")
        } else {
            reference = events
        }
    }
    return 0
}

private func parse(
    _ stream: UnsafeRawBufferPointer, pieces: [Int], maxHeadBytes: Int, maxHeaderCount: Int
) -> [Event] {
    var parser = ResponseHeadParser(maxHeadBytes: maxHeadBytes, maxHeaderCount: maxHeaderCount)
    var events: [Event] = []
    var headStart = 0
    var offset = 0
    for piece in pieces {
        let end = offset + piece
        var start = offset
        while start < end {
            let slice = UnsafeRawBufferPointer(rebasing: stream[start..<end])
            do {
                switch try parser.feed(slice) {
                case .needMore:
                    start = end
                case .complete(let head, let consumed):
                    require(
                        consumed >= 1 && consumed <= slice.count, "consumed \(consumed) of \(slice.count)")
                    start += consumed
                    require(start - headStart <= maxHeadBytes, "a \(start - headStart)-byte head passed")
                    check(head, maxHeaderCount: maxHeaderCount)
                    events.append(.head(head, end: start))
                    headStart = start
                }
            } catch {
                // Errors are sticky: any later input throws the same error.
                let again = Result { () throws(HTTPParseError) in try parser.feed(slice) }
                require(again == .failure(error), "after \(error) the parser answered \(again)")
                events.append(.failed(error))
                return events
            }
        }
        offset = end
    }
    return events
}

/// What every parsed head must satisfy.
private func check(_ head: ResponseHead, maxHeaderCount: Int) {
    require(head.versionMajor == 1 && (0...9).contains(head.versionMinor), "version \(head.versionMinor)")
    require((100...999).contains(head.status), "status \(head.status)")
    require(head.headers.count <= maxHeaderCount, "\(head.headers.count) headers")
    require(
        !head.reason.unicodeScalars.contains { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }, "reason")
    for field in head.headers {
        require(HTTPHeaders.isToken(field.name), "field name \(field.name)")
        require(HTTPHeaders.isValidFieldValue(field.value), "field value \(field.value.debugDescription)")
        require(head.headers[field.name] != nil, "lookup of \(field.name)")
    }
    if let length = head.contentLength {
        require(length >= 0, "Content-Length \(length)")
        require(!head.headers.contains(name: "Transfer-Encoding"), "length with Transfer-Encoding")
    }
    if head.isChunked {
        require(head.headers.contains(name: "Transfer-Encoding"), "chunked without Transfer-Encoding")
    }
    _ = head.keepAlive
}
