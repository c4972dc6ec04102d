import Foundation
import Testing

@testable import Fastpull
@testable import FastpullCommandLine
@testable import FastpullEngine
@testable import FastpullHTTP

/// Replays the fuzz corpora in `Fixtures/fuzz/<target>/` (the seeds, and every input a fuzzer ever
/// crashed on, kept there once fixed) through the code each libFuzzer target in `Fuzz/` exercises,
/// with the same main invariants, so that CI guards them without libFuzzer.
///
/// To keep a crash found by `Fuzz/run.sh` as a regression test: copy the input into
/// `Fixtures/fuzz/<target>/crash-<what>` and fix the code until this suite passes.
@Suite("Fuzz corpus regressions")
struct FuzzRegressionTests {
    static let corpusRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/fuzz")

    /// Every input of a target's corpus, by file name.
    static func corpus(_ target: String) throws -> [(name: String, bytes: [UInt8])] {
        let folder = corpusRoot.appendingPathComponent(target)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        return try names.map { ($0, [UInt8](try Data(contentsOf: folder.appendingPathComponent($0)))) }
    }

    @Test func everyTargetHasSeeds() throws {
        for target in [
            "response-head", "chunked", "content-range", "digest-headers", "checksum-file", "journal",
            "content-disposition", "batch-file",
        ] {
            #expect(try !Self.corpus(target).isEmpty, "no seeds for \(target)")
        }
    }

    // MARK: - response-head

    private enum HeadEvent: Equatable {
        case head(ResponseHead, end: Int)
        case failed(HTTPParseError)
    }

    /// Parses head after head, fed in `pieces`, as the fuzz target does.
    private static func heads(_ stream: [UInt8], pieces: [Int], maxHeadBytes: Int, maxHeaderCount: Int)
        -> [HeadEvent]
    {
        var parser = ResponseHeadParser(maxHeadBytes: maxHeadBytes, maxHeaderCount: maxHeaderCount)
        var events: [HeadEvent] = []
        var offset = 0
        for piece in pieces {
            var start = offset
            let end = offset + piece
            while start < end {
                let progress = stream[start..<end].withUnsafeBytes { slice in
                    Result { () throws(HTTPParseError) in try parser.feed(slice) }
                }
                switch progress {
                case .success(.needMore):
                    start = end
                case .success(.complete(let head, let consumed)):
                    start += consumed
                    events.append(.head(head, end: start))
                case .failure(let error):
                    events.append(.failed(error))
                    return events
                }
            }
            offset = end
        }
        return events
    }

    @Test func responseHeadCorpusParsesTheSameWhateverTheSplit() throws {
        let limits = [1, 16, 64, 256, 1024, 4096, 64 * 1024, 64 * 1024]
        let counts = [0, 2, 16, 256]
        for (name, input) in try Self.corpus("response-head") {
            guard let config = input.first else { continue }
            let stream = Array(input.dropFirst())
            let maxHeadBytes = limits[Int(config & 0x07)]
            let maxHeaderCount = counts[Int((config >> 3) & 0x03)]
            let whole = Self.heads(
                stream, pieces: stream.isEmpty ? [] : [stream.count], maxHeadBytes: maxHeadBytes,
                maxHeaderCount: maxHeaderCount)
            let bytes = Self.heads(
                stream, pieces: Array(repeating: 1, count: stream.count), maxHeadBytes: maxHeadBytes,
                maxHeaderCount: maxHeaderCount)
            #expect(bytes == whole, "\(name)")
            for case .head(let head, _) in whole {
                #expect(head.headers.count <= maxHeaderCount, "\(name)")
                #expect(head.contentLength.map { $0 >= 0 } ?? true, "\(name)")
            }
        }
    }

    // MARK: - chunked

    private enum ChunkedEnding: Equatable {
        case needMore
        case finished(end: Int)
        case failed(HTTPParseError)
    }

    private static func dechunk(_ body: [UInt8], pieces: [Int], maxChunkSizeLine: Int, maxTrailerBytes: Int)
        -> (payload: [UInt8], ending: ChunkedEnding)
    {
        var decoder = ChunkedDecoder(maxChunkSizeLine: maxChunkSizeLine, maxTrailerBytes: maxTrailerBytes)
        var payload: [UInt8] = []
        var offset = 0
        for piece in pieces {
            let progress = body[offset..<offset + piece].withUnsafeBytes { slice in
                Result { try decoder.decode(slice) { payload.append(contentsOf: $0) } }
            }
            switch progress {
            case .success(.needMore):
                break
            case .success(.finished(let consumed)):
                return (payload, .finished(end: offset + consumed))
            case .failure(let error):
                return (payload, .failed(error as? HTTPParseError ?? .badChunkSize))
            }
            offset += piece
        }
        return (payload, .needMore)
    }

    @Test func chunkedCorpusDecodesTheSameWhateverTheSplit() throws {
        let sizeLines = [1, 8, 64, 4096]
        let trailers = [0, 8, 256, 64 * 1024]
        for (name, input) in try Self.corpus("chunked") {
            guard let config = input.first else { continue }
            let body = Array(input.dropFirst())
            let maxChunkSizeLine = sizeLines[Int(config & 0x03)]
            let maxTrailerBytes = trailers[Int((config >> 2) & 0x03)]
            let whole = Self.dechunk(
                body, pieces: body.isEmpty ? [] : [body.count], maxChunkSizeLine: maxChunkSizeLine,
                maxTrailerBytes: maxTrailerBytes)
            let bytes = Self.dechunk(
                body, pieces: Array(repeating: 1, count: body.count), maxChunkSizeLine: maxChunkSizeLine,
                maxTrailerBytes: maxTrailerBytes)
            #expect(bytes.ending == whole.ending, "\(name)")
            #expect(bytes.payload == whole.payload, "\(name)")
        }
    }

    // MARK: - content-range, digest headers, checksum files, journal

    @Test func contentRangeCorpusKeepsItsInvariants() throws {
        for (name, input) in try Self.corpus("content-range") {
            guard let range = ContentRange.parse(String(decoding: input, as: UTF8.self)) else { continue }
            if let first = range.first, let last = range.last {
                #expect(first <= last && range.completeLength.map { last < $0 } ?? true, "\(name)")
            } else {
                #expect(range.completeLength != nil, "\(name)")
            }
        }
    }

    @Test func digestHeaderCorpusTrustsOnlyWellFormedDigests() throws {
        for (name, input) in try Self.corpus("digest-headers") {
            let lines = String(decoding: input, as: UTF8.self).split(separator: "\n").dropFirst()
            var headers = HTTPHeaders()
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers.add(
                    name: String(HTTPHeaders.trimmingWhitespace(line[..<colon])),
                    value: String(HTTPHeaders.trimmingWhitespace(line[line.index(after: colon)...])))
            }
            let head = ResponseHead(
                versionMajor: 1, versionMinor: 1, status: 200, reason: "", headers: headers)
            for full in [true, false] {
                for expectation in ServerDigests.expectations(from: head, isFullRepresentation: full).trusted
                {
                    let algorithm = expectation.checksum.digestAlgorithm
                    #expect(expectation.checksum.expectedBytes?.count == algorithm.digestLength, "\(name)")
                }
            }
        }
    }

    @Test func checksumFileCorpusGivesOnlyWellFormedEntries() throws {
        for (name, input) in try Self.corpus("checksum-file") {
            let text = String(decoding: input, as: UTF8.self)
            for entry in ChecksumFile.entries(in: text) {
                let algorithm = entry.checksum.digestAlgorithm
                #expect(entry.checksum.expectedBytes?.count == algorithm.digestLength, "\(name)")
            }
            _ = ChecksumFile.parse(text, fileName: "x.iso")
        }
    }

    @Test func journalCorpusRoundTrips() throws {
        var decoded = 0
        for (name, input) in try Self.corpus("journal") {
            guard let journal = try? Journal.decode(Data(input)) else { continue }
            decoded += 1
            #expect(try Journal.decode(journal.encoded()) == journal, "\(name)")
            let kept = journal.keptBytes(currentBootID: journal.bootID)
            #expect(kept >= 0 && kept <= journal.size, "\(name)")
        }
        #expect(decoded > 0, "no seed journal decodes")
    }

    // MARK: - content-disposition

    /// What is wrong with `name` as a name to create in the output folder, or nil: the rules
    /// `OutputName.sanitize` promises (and that a safe name sanitizes to itself).
    private static func unsafety(of name: String) -> String? {
        guard let first = name.unicodeScalars.first, let last = name.unicodeScalars.last else {
            return "empty"
        }
        if name.utf8.count > OutputName.maximumBytes { return "\(name.utf8.count) bytes" }
        if let bad = name.unicodeScalars.first(where: {
            switch $0.value {
            case 0x2F, 0x5C, 0x00...0x1F, 0x7F...0x9F, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069:
                return true
            default: return false
            }
        }) {
            return "holds U+\(String(bad.value, radix: 16))"
        }
        if first == "." { return "starts with a dot" }
        if CharacterSet.whitespaces.contains(first) || CharacterSet.whitespaces.contains(last) {
            return "surrounding whitespace"
        }
        if OutputName.sanitize(name).map({ Array($0.unicodeScalars) }) != Array(name.unicodeScalars) {
            return "changes when sanitized again"
        }
        return nil
    }

    @Test func contentDispositionCorpusGivesSafeNames() throws {
        let url = URL(string: "https://example.org/downloads/file.bin")!
        for (name, input) in try Self.corpus("content-disposition") {
            let text = String(decoding: input, as: UTF8.self)
            let derived = OutputName.derive(from: url, contentDisposition: text)
            #expect(derived == OutputName.derive(from: url, contentDisposition: text), "\(name)")
            let fileName = ContentDisposition.fileName(in: text)
            let candidates = [derived, OutputName.sanitize(text), fileName.flatMap(OutputName.sanitize)]
            for candidate in candidates.compactMap({ $0 }) {
                #expect(Self.unsafety(of: candidate) == nil, "\(name): \(candidate.debugDescription)")
            }
        }
    }

    /// The names in the `crash-*` inputs of the content-disposition corpus, and what they give now.
    @Test(arguments: [
        // A separator followed by a combining mark (or after a prepended mark) is one Character.
        ("x/\u{301}y", "\u{301}y"),
        ("a\u{600}/../\u{301}b", "\u{301}b"),
        // So is a leading dot followed by one.
        (".\u{301}bashrc", "\u{301}bashrc"),
        // Shortening does not leave whitespace at the end.
        // (Names keep room for the files beside the output: at most 232 bytes.)
        (String(repeating: "x", count: 231) + " yz", String(repeating: "x", count: 231)),
        // A character longer than the limit, alone or as the extension.
        ("a" + String(repeating: "\u{301}", count: 200), "a" + String(repeating: "\u{301}", count: 115)),
        (
            String(repeating: "b", count: 228) + ".x" + String(repeating: "\u{301}", count: 200),
            String(repeating: "b", count: 228) + "."
        ),
    ])
    func namesFromFuzzCrashesAreSafe(input: String, expected: String) throws {
        let name = try #require(OutputName.sanitize(input))
        #expect(Self.unsafety(of: name) == nil, "\(name.debugDescription)")
        #expect(Array(name.unicodeScalars) == Array(expected.unicodeScalars), "\(name.debugDescription)")
    }

    // MARK: - batch-file

    @Test func batchFileCorpusGivesWellFormedLines() throws {
        var parsed = 0
        for (name, input) in try Self.corpus("batch-file") {
            let text = String(decoding: input, as: UTF8.self)
            let lineCount = BatchFile.lines(of: text).count
            #expect(lineCount == text.unicodeScalars.filter { $0 == "\n" }.count + 1, "\(name)")
            let result = Result { () throws(UsageError) in try BatchFile.parse(text, source: "list.txt") }
            let again = Result { () throws(UsageError) in try BatchFile.parse(text, source: "list.txt") }
            #expect(result == again, "\(name)")
            switch result {
            case .success(let lines):
                parsed += 1
                #expect(lines.map(\.number) == lines.map(\.number).sorted(), "\(name)")
                for line in lines {
                    #expect((1...lineCount).contains(line.number), "\(name)")
                    #expect(["http", "https"].contains(line.url.scheme?.lowercased() ?? ""), "\(name)")
                    #expect(line.url.host().map { !$0.isEmpty } == true, "\(name)")
                    if let output = line.output {
                        #expect(!output.isEmpty && !output.contains("\n"), "\(name)")
                        #expect(!BatchFile.isChecksum(output), "\(name)")
                    }
                    for checksum in line.checksums {
                        #expect(try Checksum(parsing: checksum.description) == checksum, "\(name)")
                    }
                }
            case .failure(let error):
                #expect(error.message.hasPrefix("error: list.txt:"), "\(name): \(error.message)")
            }
        }
        #expect(parsed > 0, "no seed batch file parses")
    }
}
