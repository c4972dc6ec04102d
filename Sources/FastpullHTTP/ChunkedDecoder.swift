import FastpullNet

/// Incremental decoder for the chunked transfer coding (RFC 9112 §7.1).
///
/// A value-type state machine with no I/O and no allocation: payload bytes are handed to `emit` as
/// slices of the caller's input, never copied. The chunk-size line and trailer section are parsed byte
/// by byte (a few bytes per chunk); chunk data is passed through in one slice per call. The decoded
/// payload and the `consumed` count do not depend on how the input is split between calls.
///
/// Accepts bare LF line ends and whitespace before chunk extensions; ignores chunk extensions; parses
/// and discards trailer fields. After `.finished` every later call returns `.finished(consumed: 0)`.
/// After it throws an `HTTPParseError`, every later call throws the same error.
package struct ChunkedDecoder {
    package enum Progress: Equatable {
        case needMore
        case finished(consumed: Int)
    }

    private enum State {
        /// Expecting the first hex digit of a chunk size.
        case sizeStart
        /// Inside the hex digits of a chunk size.
        case size
        /// Whitespace after the size, before `;` or the line end.
        case sizeWhitespace
        /// Inside chunk extensions, skipped up to the line end.
        case chunkExtension
        /// Saw CR at the end of the chunk-size line.
        case sizeLineFeed
        /// Inside chunk data; `remaining` bytes left.
        case data
        /// After chunk data, expecting CR (or a bare LF).
        case dataCarriageReturn
        /// After chunk data and CR, expecting LF.
        case dataLineFeed
        /// At the start of a trailer field line or of the final empty line.
        case trailerLineStart
        case trailerName
        case trailerValue
        /// Saw CR ending a trailer line (`emptyLine`: the final empty line).
        case trailerLineFeed(emptyLine: Bool)
        case finished
    }

    private let maxChunkSizeLine: Int
    private let maxTrailerBytes: Int
    private var state = State.sizeStart
    /// The chunk size being parsed, then the data bytes left in the chunk.
    private var remaining: Int64 = 0
    private var sizeLineBytes = 0
    private var trailerBytes = 0
    private var failure: HTTPParseError?

    /// - Parameters:
    ///   - maxChunkSizeLine: the longest accepted chunk-size line, extensions and line end included;
    ///     longer lines throw `chunkTooLarge`.
    ///   - maxTrailerBytes: the most bytes of trailer fields accepted after the last chunk (the final
    ///     empty line not counted); more throw `trailerTooLarge`.
    package init(maxChunkSizeLine: Int = 4096, maxTrailerBytes: Int = 64 * 1024) {
        precondition(maxChunkSizeLine > 0, "maxChunkSizeLine must be positive")
        precondition(maxTrailerBytes >= 0, "maxTrailerBytes must not be negative")
        self.maxChunkSizeLine = maxChunkSizeLine
        self.maxTrailerBytes = maxTrailerBytes
    }

    /// Whether the last chunk and the trailer section have been decoded.
    package var isFinished: Bool {
        if case .finished = state { return true }
        return false
    }

    /// Decodes `input`, calling `emit` with each slice of payload (slices of `input`, no copies).
    /// `.finished(consumed:)` once the last-chunk and trailers are complete (bytes after that are
    /// the next response). Chunk extensions are ignored; sizes over Int64 or hex overflow -> badChunkSize.
    /// Errors thrown by `emit` are rethrown as they are.
    package mutating func decode(
        _ input: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Progress {
        if let failure {
            throw failure
        }
        let count = input.count
        var index = 0
        while index < count {
            switch state {
            case .data:
                let available = count - index
                let take = remaining < Int64(available) ? Int(remaining) : available
                remaining -= Int64(take)
                if remaining == 0 {
                    state = .dataCarriageReturn
                }
                let start = index
                index += take
                try emit(UnsafeRawBufferPointer(rebasing: input[start..<index]))
            case .finished:
                return .finished(consumed: index)
            default:
                let byte = input[index]
                index += 1
                do {
                    try step(byte)
                } catch {
                    failure = error
                    throw error
                }
            }
        }
        return isFinished ? .finished(consumed: index) : .needMore
    }

    /// Advances the state machine by one byte outside chunk data.
    private mutating func step(_ byte: UInt8) throws(HTTPParseError) {
        switch state {
        case .sizeStart:
            try countSizeLineByte()
            guard let digit = Self.hexValue(byte) else { throw .badChunkSize }
            remaining = digit
            state = .size
        case .size:
            try countSizeLineByte()
            if let digit = Self.hexValue(byte) {
                guard remaining <= (Int64.max - digit) / 16 else { throw .badChunkSize }
                remaining = remaining &* 16 &+ digit
            } else {
                try endSizeDigits(byte)
            }
        case .sizeWhitespace:
            try countSizeLineByte()
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"):
                break
            default:
                try endSizeDigits(byte)
            }
        case .chunkExtension:
            try countSizeLineByte()
            switch byte {
            case UInt8(ascii: "\r"):
                state = .sizeLineFeed
            case UInt8(ascii: "\n"):
                endSizeLine()
            case UInt8(ascii: "\t"):
                break
            default:
                guard !HTTPHeaders.isControl(byte) else { throw .badChunkSize }
            }
        case .sizeLineFeed:
            try countSizeLineByte()
            guard byte == UInt8(ascii: "\n") else { throw .badChunkSize }
            endSizeLine()
        case .dataCarriageReturn:
            switch byte {
            case UInt8(ascii: "\r"):
                state = .dataLineFeed
            case UInt8(ascii: "\n"):
                startChunk()
            default:
                throw .badChunkTerminator
            }
        case .dataLineFeed:
            guard byte == UInt8(ascii: "\n") else { throw .badChunkTerminator }
            startChunk()
        case .trailerLineStart:
            switch byte {
            case UInt8(ascii: "\r"):
                state = .trailerLineFeed(emptyLine: true)
            case UInt8(ascii: "\n"):
                state = .finished
            default:
                try countTrailerByte()
                // obs-fold (leading whitespace) and a missing name are not token characters.
                guard HTTPHeaders.isTokenCharacter(byte) else { throw .badHeaderLine }
                state = .trailerName
            }
        case .trailerName:
            try countTrailerByte()
            if byte == UInt8(ascii: ":") {
                state = .trailerValue
            } else if !HTTPHeaders.isTokenCharacter(byte) {
                throw .badHeaderLine
            }
        case .trailerValue:
            try countTrailerByte()
            switch byte {
            case UInt8(ascii: "\r"):
                state = .trailerLineFeed(emptyLine: false)
            case UInt8(ascii: "\n"):
                state = .trailerLineStart
            case UInt8(ascii: "\t"):
                break
            default:
                guard !HTTPHeaders.isControl(byte) else { throw .badHeaderLine }
            }
        case .trailerLineFeed(let emptyLine):
            if !emptyLine {
                try countTrailerByte()
            }
            guard byte == UInt8(ascii: "\n") else { throw .badHeaderLine }
            state = emptyLine ? .finished : .trailerLineStart
        case .data, .finished:
            preconditionFailure("chunk data and the end are handled by decode")
        }
    }

    /// The byte after the hex digits (or after whitespace following them).
    private mutating func endSizeDigits(_ byte: UInt8) throws(HTTPParseError) {
        switch byte {
        case UInt8(ascii: " "), UInt8(ascii: "\t"):
            state = .sizeWhitespace
        case UInt8(ascii: ";"):
            state = .chunkExtension
        case UInt8(ascii: "\r"):
            state = .sizeLineFeed
        case UInt8(ascii: "\n"):
            endSizeLine()
        default:
            throw .badChunkSize
        }
    }

    private mutating func endSizeLine() {
        sizeLineBytes = 0
        if remaining == 0 {
            trailerBytes = 0
            state = .trailerLineStart
        } else {
            state = .data
        }
    }

    private mutating func startChunk() {
        remaining = 0
        state = .sizeStart
    }

    @inline(__always)
    private mutating func countSizeLineByte() throws(HTTPParseError) {
        sizeLineBytes += 1
        guard sizeLineBytes <= maxChunkSizeLine else { throw .chunkTooLarge }
    }

    @inline(__always)
    private mutating func countTrailerByte() throws(HTTPParseError) {
        trailerBytes += 1
        guard trailerBytes <= maxTrailerBytes else { throw .trailerTooLarge }
    }

    @inline(__always)
    private static func hexValue(_ byte: UInt8) -> Int64? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
            return Int64(byte &- UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"):
            return Int64(byte &- UInt8(ascii: "a") &+ 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"):
            return Int64(byte &- UInt8(ascii: "A") &+ 10)
        default:
            return nil
        }
    }
}
