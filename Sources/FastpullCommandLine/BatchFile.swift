import Fastpull
import FoundationEssentials

/// The input file of `fastpull -i FILE`: one download a line, `URL [MIRROR-URL]... [OUTPUT]
/// [ALGO=VALUE]...`.
///
/// ```
/// # the release (from two servers) and its notes
/// https://example.org/x.iso	https://mirror.example.net/x.iso  x.iso  sha256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
/// https://example.org/NOTES.txt
/// ```
///
/// Every further http or https URL on a line is another source of the same file, as aria2 reads
/// tab-separated URLs.
/// Fields are separated by spaces or tabs; a field with spaces can be quoted with `"…"` (with `\"`
/// and `\\` inside). Blank lines and lines whose first non-blank character is `#` are skipped.
/// A field of the form `ALGO=VALUE` with a known algorithm (`sha256`, `sha512`, `sha1`, `md5`,
/// `crc32c`) is a checksum, as `--checksum` takes it; the first other field after the URL is the
/// output path (relative to `--dir`, else to the current folder).
///
/// Indented `KEY=VALUE` lines under a URL line are that file's options, as aria2 writes them:
/// `out=` (the output path), `dir=` (its folder), `header=` (a header field for this file's requests,
/// repeatable), `checksum=` (`sha-256=HEX`). aria2's connection options (`split`,
/// `max-connection-per-server`, `min-split-size`, `continue`) are read and left to fastpull, which
/// chooses those itself; any other key is an error naming it.
package enum BatchFile {
    /// One download of the file.
    package struct Line: Sendable, Equatable {
        /// The 1-based line number, for messages.
        package var number: Int
        /// The URL, validated (http or https with a host).
        package var url: URL
        /// The output path, if the line gives one.
        package var output: String?
        /// The checksums the line gives.
        package var checksums: [Checksum]
        /// The other URLs of the same file the line gives.
        package var mirrors: [URL]
        /// The folder its output goes into (`dir=`), instead of `--dir`.
        package var directory: String?
        /// Header fields for this file's requests only (`header=`).
        package var headers: [Header]

        /// Creates a line.
        package init(
            number: Int, url: URL, output: String?, checksums: [Checksum], mirrors: [URL] = [],
            directory: String? = nil, headers: [Header] = []
        ) {
            self.number = number
            self.url = url
            self.output = output
            self.checksums = checksums
            self.mirrors = mirrors
            self.directory = directory
            self.headers = headers
        }
    }

    /// Parses the whole text; `source` names the file in messages (`-` is stdin).
    ///
    /// - Throws: ``UsageError`` naming the file and line: a bad URL, a bad checksum, an unclosed
    ///   quote, or more than one output path.
    package static func parse(_ text: String, source: String) throws(UsageError) -> [Line] {
        var reader = Reader(source: source)
        var result: [Line] = []
        for raw in lines(of: text) {
            let read = reader.read(raw)
            if let problem = read.problem { throw problem }
            if let line = read.completed { result.append(line) }
        }
        if let line = reader.flush() { result.append(line) }
        return result
    }

    /// Reads a list a line at a time, as it comes (`-i -`): a file's entry is complete once the next
    /// line that is not one of its option lines arrives, at the end of input, or when the input
    /// pauses (``flush()``). An entry with a bad line — its URL line or one of its option lines — is
    /// never handed out: a file is not fetched without an option its list gave it, and a bad URL
    /// line's option lines are nobody's.
    package struct Reader: Sendable {
        /// What one line gave: the entry it completed, and what was wrong with it.
        package struct Read: Sendable {
            /// The entry before, complete now.
            package var completed: Line?
            /// The line's problem, naming the list and line; its entry is dropped.
            package var problem: UsageError?
        }

        /// The list's name in messages.
        let name: String
        /// The entry whose option lines may still follow.
        private var pending: Line?
        /// Whether the lines read since the last URL line belong to an entry that is dropped.
        private var dropping = false
        /// Whether an entry was handed out by ``flush()`` with no line after it yet.
        private var flushed = false
        private var number = 0

        /// A reader of the list `source` (`-` is standard input).
        package init(source: String) {
            name = source == "-" ? "standard input" : source
        }

        /// Reads the next line.
        package mutating func read(_ raw: Substring) -> Read {
            number += 1
            let content = raw.hasSuffix("\r") ? raw.dropLast() : raw
            let trimmed = content.drop(while: { $0 == " " || $0 == "\t" })
            if trimmed.isEmpty || trimmed.hasPrefix("#") { return Read() }
            let number = number
            let name = name
            func failure(_ problem: String) -> UsageError {
                UsageError(message: "error: \(name):\(number): \(problem)")
            }
            if trimmed.startIndex != content.startIndex, !isURL(String(trimmed)) {
                if dropping { return Read() }
                guard pending != nil else {
                    return Read(
                        problem: failure(
                            flushed
                                ? "an option line ('\(trimmed)') came after its file's download started (write a file's option lines together with its URL line)"
                                : "an option line ('\(trimmed)') with no URL line before it"))
                }
                do {
                    try apply(option: String(trimmed), to: &pending!, failure: failure)
                    return Read()
                } catch {
                    pending = nil
                    dropping = true
                    return Read(problem: error)
                }
            }
            let completed = pending
            pending = nil
            flushed = false
            do {
                pending = try Self.entry(trimmed, number: number, failure: failure)
                dropping = false
                return Read(completed: completed)
            } catch {
                dropping = true
                return Read(completed: completed, problem: error)
            }
        }

        /// The entry still open, now complete (the end of input, or a pause in it).
        package mutating func flush() -> Line? {
            defer { pending = nil }
            if pending != nil { flushed = true }
            return pending
        }

        /// The entry a URL line starts.
        private static func entry(
            _ trimmed: Substring, number: Int, failure: (String) -> UsageError
        ) throws(UsageError) -> Line {
            guard let fields = fields(of: trimmed) else { throw failure("unclosed quote") }
            let urlText = fields[0]
            let url: URL
            do {
                url = try CommandOptions.url(from: urlText)
            } catch {
                throw failure(String(error.message.dropFirst("error: ".count)))
            }
            var output: String?
            var checksums: [Checksum] = []
            var mirrors: [URL] = []
            for field in fields.dropFirst() {
                if isURL(field) {
                    do {
                        mirrors.append(try CommandOptions.url(from: field))
                    } catch {
                        throw failure(String(error.message.dropFirst("error: ".count)))
                    }
                } else if isChecksum(field) {
                    do {
                        checksums.append(try Checksum(parsing: field))
                    } catch {
                        throw failure(error.message)
                    }
                } else if output == nil {
                    guard !field.isEmpty else { throw failure("empty output path") }
                    output = field
                } else {
                    throw failure(
                        "unexpected '\(field)' (expected URL [MIRROR-URL...] [OUTPUT] [sha256=HEX]; quote paths with spaces)"
                    )
                }
            }
            return Line(number: number, url: url, output: output, checksums: checksums, mirrors: mirrors)
        }
    }

    /// aria2's connection options, read and left to fastpull.
    static let chosenHere: Set<String> = ["split", "max-connection-per-server", "min-split-size", "continue"]

    /// Applies the aria2 option `text` (`KEY=VALUE`, indented under its URL line) to `line`.
    static func apply(
        option text: String, to line: inout Line, failure: (String) -> UsageError
    ) throws(UsageError) {
        guard let equals = text.firstIndex(of: "=") else {
            throw failure(
                "expected KEY=VALUE under the URL line (out=, dir=, header=, checksum=), got '\(text)'")
        }
        let key = text[..<equals].trimmingSpaces()
        let value = text[text.index(after: equals)...].trimmingSpaces()
        switch key {
        case "out":
            guard !value.isEmpty else { throw failure("empty out=") }
            guard line.output == nil else { throw failure("a second output path (out=\(value))") }
            line.output = value
        case "dir":
            guard !value.isEmpty else { throw failure("empty dir=") }
            line.directory = value
        case "header":
            do {
                line.headers.append(try CommandOptions.header(value))
            } catch {
                throw failure("header=: " + error.message.dropFirst("error: --header: ".count))
            }
        case "checksum":
            do {
                line.checksums.append(try Checksum(parsing: value))
            } catch {
                throw failure("checksum=: \(error.message)")
            }
        case _ where chosenHere.contains(key):
            break
        default:
            throw failure(
                "aria2's option '\(key)' is not supported in a list (out=, dir=, header=, checksum= are; split=, max-connection-per-server=, min-split-size= and continue= are left to fastpull)"
            )
        }
    }

    /// The lines of `text`, split at LF and CRLF (one `Character` in Swift, so splitting at `"\n"`
    /// alone would miss it).
    static func lines(of text: String) -> [Substring] {
        text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
    }

    /// Whether `field` is an http or https URL (another source), not a path.
    static func isURL(_ field: String) -> Bool {
        let lowered = field.lowercased()
        return lowered.hasPrefix("http://") || lowered.hasPrefix("https://")
    }

    /// Whether `field` reads as `ALGO=VALUE` with a known algorithm (else it is a path, even with `=`).
    static func isChecksum(_ field: String) -> Bool {
        guard let equals = field.firstIndex(of: "=") else { return false }
        let name = field[..<equals].lowercased().replacing("-", with: "")
        return ["sha256", "sha512", "sha1", "md5", "crc32c"].contains(name)
    }

    /// The fields of a line, quotes removed; nil for an unclosed quote. Read byte by byte: the
    /// separators, quotes and backslashes are ASCII, which never occurs inside a multi-byte UTF-8
    /// character.
    static func fields(of line: Substring) -> [String]? {
        var fields: [String] = []
        var current: [UInt8] = []
        var inField = false
        var quoted = false
        var bytes = line.utf8.makeIterator()
        while let byte = bytes.next() {
            if quoted {
                if byte == UInt8(ascii: "\\"), let next = bytes.next() {
                    current.append(next)
                } else if byte == UInt8(ascii: "\"") {
                    quoted = false
                } else {
                    current.append(byte)
                }
            } else if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                if inField { fields.append(String(decoding: current, as: UTF8.self)) }
                current.removeAll(keepingCapacity: true)
                inField = false
            } else if byte == UInt8(ascii: "\"") {
                quoted = true
                inField = true
            } else {
                current.append(byte)
                inField = true
            }
        }
        guard !quoted else { return nil }
        if inField { fields.append(String(decoding: current, as: UTF8.self)) }
        return fields
    }
}
