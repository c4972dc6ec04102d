import FastpullHTTP

/// Reads checksum files as `sha256sum`, `sha512sum`, `sha1sum`, `md5sum`, `shasum` and BSD/OpenSSL tools
/// write them, and finds the expected digest of one file.
///
/// Understood line forms (CRLF or LF endings, an optional UTF-8 byte-order mark):
///
/// - GNU / shasum: `HEX  name` (text mode), `HEX *name` (binary mode), also `HEX name` and `HEX<TAB>name`.
///   The algorithm comes from the number of digits: 32 md5, 40 sha1, 64 sha256, 128 sha512.
/// - BSD / `--tag` / OpenSSL: `SHA256 (name) = HEX`, `MD5 (name) = HEX`, `SHA2-256(name)= HEX`; the tag
///   names the algorithm, and must agree with the number of digits.
/// - GNU escaped names: a line starting with `\` has `\\`, `\n` and `\r` escapes in its name.
/// - A file whose only entry is a bare `HEX` (or `HEX  -`, the output for standard input) applies to
///   any file name.
///
/// Leading spaces and tabs are skipped, as GNU does. Blank lines, `#` comments and anything else (PGP
/// armour, `Hash:` lines) are skipped.
package enum ChecksumFile {
    /// One parsed line.
    struct Entry: Sendable, Equatable {
        /// The file name as written (unescaped); nil for a bare hash.
        var name: String?
        var checksum: Checksum
    }

    /// The expected digest of `fileName` (a bare file name such as `ubuntu.iso`, or a relative path)
    /// in `text`, or nil when the file has no usable line for it.
    ///
    /// A line matches when its name equals `fileName`, or else when the last path components of both
    /// are equal (`./dist/x.tar.gz` matches `x.tar.gz`); exact matches win. When several lines match
    /// with different algorithms, the one `checksumFileName` suggests wins (`SHA512SUMS`,
    /// `x.iso.sha256`, `MD5SUMS`; see ``algorithmHint(checksumFileName:)``), else the strongest
    /// (sha512, sha256, sha1, md5). Contradictory lines (same name, same algorithm, different digests)
    /// give nil: such a file cannot be trusted to verify anything.
    ///
    /// - Parameters:
    ///   - checksumFileName: the path or URL the text came from, used only for the algorithm hint.
    static func parse(_ text: String, fileName: String, checksumFileName: String? = nil) -> Checksum? {
        parse(text, fileNames: [fileName], checksumFileName: checksumFileName)
    }

    /// Like ``parse(_:fileName:checksumFileName:)``, trying each of `fileNames` in order (for example
    /// the remote file's name, then the output file's name) and returning the first found.
    package static func parse(_ text: String, fileNames: [String], checksumFileName: String? = nil)
        -> Checksum?
    {
        let entries = entries(in: text)
        let hint = checksumFileName.flatMap { algorithmHint(checksumFileName: $0) }
        if entries.count == 1, entries[0].name == nil {
            return entries[0].checksum
        }
        for fileName in fileNames {
            var candidates = entries.filter { $0.name == fileName }
            if candidates.isEmpty {
                let base = baseName(fileName)
                candidates = entries.filter { $0.name.map(baseName) == base }
            }
            guard !candidates.isEmpty else { continue }
            return choose(from: candidates, hint: hint)
        }
        return nil
    }

    /// Every parsable line of `text`, in order; lines that are not checksum entries are left out.
    static func entries(in text: String) -> [Entry] {
        var body = Substring(text)
        if body.hasPrefix("\u{FEFF}") {
            body = body.dropFirst()
        }
        var result: [Entry] = []
        // "\r\n" is a single `Character`, so it is a separator of its own.
        let lines = body.split { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
        for line in lines {
            if let entry = parseLine(line) {
                result.append(entry)
            }
        }
        return result
    }

    /// The algorithm a checksum file's name suggests, from its last path component (query and fragment
    /// of a URL removed), case-insensitive: containing `sha512`/`sha-512` → sha512, `sha256`/`sha-256` →
    /// sha256, `sha1`/`sha-1` → sha1, `md5` → md5; nil otherwise (`CHECKSUMS`, `x.sum`).
    static func algorithmHint(checksumFileName: String) -> Digest.Algorithm? {
        var name = Substring(checksumFileName)
        if let cut = name.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            name = name[..<cut]
        }
        let base = baseName(String(name)).lowercased()
        for (needles, algorithm) in [
            (["sha512", "sha-512"], Digest.Algorithm.sha512), (["sha256", "sha-256"], .sha256),
            (["sha1", "sha-1"], .sha1), (["md5"], .md5),
        ] where needles.contains(where: { base.contains($0) }) {
            return algorithm
        }
        return nil
    }

    // MARK: - Lines

    private static func parseLine(_ line: Substring) -> Entry? {
        var line = line.drop { $0 == " " || $0 == "\t" }
        var escaped = false
        if line.first == "\\" {
            escaped = true
            line = line.dropFirst()
        }
        if line.isEmpty || line.first == "#" {
            return nil
        }
        if let entry = parseBSD(line, escaped: escaped) {
            return entry
        }
        return parseGNU(line, escaped: escaped)
    }

    /// `HEX`, `HEX  name`, `HEX *name`, `HEX name`, `HEX<TAB>name`.
    private static func parseGNU(_ line: Substring, escaped: Bool) -> Entry? {
        let utf8 = line.utf8
        let hexEnd = utf8.firstIndex { !isHexDigit($0) } ?? utf8.endIndex
        let hex = line[utf8.startIndex..<hexEnd]
        guard let algorithm = algorithm(hexCount: hex.utf8.count) else { return nil }
        let checksum = Checksum(algorithm, hex: hex.lowercased())
        var rest = line[hexEnd...]
        if HTTPHeaders.trimmingWhitespace(rest).isEmpty {
            return escaped ? nil : Entry(name: nil, checksum: checksum)
        }
        guard let separator = rest.first, separator == " " || separator == "\t" else { return nil }
        rest = rest.dropFirst()
        if let marker = rest.first, marker == " " || marker == "*" {
            rest = rest.dropFirst()
        }
        guard !rest.isEmpty else { return nil }
        guard let name = escaped ? unescape(rest) : String(rest) else { return nil }
        return Entry(name: name == "-" ? nil : name, checksum: checksum)
    }

    /// `TAG (name) = HEX` and OpenSSL's `TAG(name)= HEX`. The digest ends the line and the separator
    /// directly precedes it, so a name may itself contain `) = `.
    private static func parseBSD(_ line: Substring, escaped: Bool) -> Entry? {
        guard let open = line.firstIndex(of: "(") else { return nil }
        let tag = HTTPHeaders.trimmingWhitespace(line[..<open])
        guard !tag.isEmpty, !tag.contains(" "), let algorithm = bsdAlgorithm(tag) else { return nil }
        let body = HTTPHeaders.trimmingWhitespace(line[line.index(after: open)...])
        let hex = body.suffix(2 * algorithm.digestLength)
        guard Digest.isHex(hex, count: 2 * algorithm.digestLength) else { return nil }
        var head = body[..<hex.startIndex]
        if head.hasSuffix(") = ") {
            head = head.dropLast(4)
        } else if head.hasSuffix(")= ") {
            head = head.dropLast(3)
        } else {
            return nil
        }
        guard !head.isEmpty, let name = escaped ? unescape(head) : String(head) else { return nil }
        return Entry(name: name, checksum: Checksum(algorithm, hex: hex.lowercased()))
    }

    private static func bsdAlgorithm(_ tag: Substring) -> Digest.Algorithm? {
        guard let algorithm = Digest.Algorithm(name: tag), algorithm != .crc32c else { return nil }
        return algorithm
    }

    private static func algorithm(hexCount: Int) -> Digest.Algorithm? {
        switch hexCount {
        case 32: return .md5
        case 40: return .sha1
        case 64: return .sha256
        case 128: return .sha512
        default: return nil
        }
    }

    /// Undoes GNU coreutils' escaping of names (`\\` → `\`, `\n` → newline, `\r` → carriage return);
    /// nil for any other escape.
    private static func unescape(_ name: Substring) -> String? {
        var result = ""
        var iterator = name.makeIterator()
        while let character = iterator.next() {
            guard character == "\\" else {
                result.append(character)
                continue
            }
            switch iterator.next() {
            case "\\": result.append("\\")
            case "n": result.append("\n")
            case "r": result.append("\r")
            default: return nil
            }
        }
        return result
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"):
            return true
        default:
            return false
        }
    }

    // MARK: - Choosing

    private static func choose(from candidates: [Entry], hint: Digest.Algorithm?) -> Checksum? {
        let algorithms = Set(candidates.map(\.checksum.digestAlgorithm))
        let algorithm: Digest.Algorithm
        if let hint, algorithms.contains(hint) {
            algorithm = hint
        } else {
            algorithm = algorithms.max { $0.strength < $1.strength }!
        }
        let values = Set(candidates.map(\.checksum).filter { $0.digestAlgorithm == algorithm })
        guard values.count == 1 else { return nil }
        return values.first
    }

    /// The last `/`-separated component (`./a/b.iso` → `b.iso`); the name itself when it has none.
    private static func baseName(_ name: String) -> String {
        guard let slash = name.lastIndex(of: "/") else { return name }
        return String(name[name.index(after: slash)...])
    }
}
