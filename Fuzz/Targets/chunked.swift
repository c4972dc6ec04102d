// libFuzzer target: ChunkedDecoder.
//
// Input: one configuration byte (limits and split seed), then a chunked body. It is decoded whole, byte
// by byte and in pseudo-random pieces; the payload, the end and any error must be the same each time,
// every payload slice must lie inside the input of its call, and errors and the end must be sticky.

private let sizeLineLimits = [1, 8, 64, 4096]
private let trailerLimits = [0, 8, 256, 64 * 1024]

private enum Ending: Equatable {
    case needMore
    case finished(end: Int)
    case failed(HTTPParseError)
}

/// libFuzzer's entry point: runs one input; a violated invariant stops the process.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzChunked(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = fuzzInput(data, size)
    guard let config = input.first else { return 0 }
    let body = UnsafeRawBufferPointer(rebasing: input[1...])
    let maxChunkSizeLine = sizeLineLimits[Int(config & 0x03)]
    let maxTrailerBytes = trailerLimits[Int((config >> 2) & 0x03)]
    let seed = UInt64(config >> 4) &* 0x1_0000 &+ UInt64(size)

    var reference: (payload: [UInt8], ending: Ending)?
    for split in Split.allCases {
        var decoder = ChunkedDecoder(maxChunkSizeLine: maxChunkSizeLine, maxTrailerBytes: maxTrailerBytes)
        let result = decode(body, pieces: split.pieces(count: body.count, seed: seed), with: &decoder)
        require(result.payload.count <= body.count, "more payload than input")
        if let reference {
            require(
                result.ending == reference.ending,
                "\(split) split ended \(result.ending), not \(reference.ending)")
            require(result.payload == reference.payload, "\(split) split gave another payload")
        } else {
            reference = result
        }
    }
    return 0
}

private func decode(
    _ body: UnsafeRawBufferPointer, pieces: [Int], with decoder: inout ChunkedDecoder
) -> (payload: [UInt8], ending: Ending) {
    var payload: [UInt8] = []
    var offset = 0
    for piece in pieces {
        let slice = UnsafeRawBufferPointer(rebasing: body[offset..<offset + piece])
        let low = UInt(bitPattern: slice.baseAddress)
        let high = low + UInt(slice.count)
        do {
            let progress = try decoder.decode(slice) { part in
                let start = UInt(bitPattern: part.baseAddress)
                require(
                    part.isEmpty || (start >= low && start + UInt(part.count) <= high), "slice outside input")
                payload.append(contentsOf: part)
            }
            switch progress {
            case .needMore:
                require(!decoder.isFinished, "needMore after the end")
            case .finished(let consumed):
                require(consumed >= 0 && consumed <= slice.count, "consumed \(consumed) of \(slice.count)")
                require(decoder.isFinished, "finished but not isFinished")
                // Once finished, nothing more is consumed.
                let again = try? decoder.decode(slice) { _ in require(false, "payload after the end") }
                require(
                    again == .finished(consumed: 0),
                    "after the end the decoder answered \(String(describing: again))")
                return (payload, .finished(end: offset + consumed))
            }
        } catch {
            guard let error = error as? HTTPParseError else {
                require(false, "unexpected error type \(error)")
                return (payload, .needMore)
            }
            let again = Result { try decoder.decode(slice) { _ in require(false, "payload after an error") } }
            require(
                (try? again.get()) == nil && (again.failureValue as? HTTPParseError) == error,
                "after \(error) the decoder answered \(again)")
            return (payload, .failed(error))
        }
        offset += piece
    }
    return (payload, .needMore)
}

extension Result {
    fileprivate var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
