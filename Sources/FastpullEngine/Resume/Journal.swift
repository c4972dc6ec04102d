import FastpullHTTP
import FoundationEssentials

/// The resume journal kept next to `<output>.part`: which remote file the bytes belong to, and how far
/// each segment got. Versioned, human-readable JSON; it never holds header values such as credentials.
///
/// Each segment records two offsets: `durable` bytes were `fdatasync`ed before the journal was
/// written, so they survive a power loss; `written` bytes were in the page cache when the journal was
/// written, so they survive a crash of the process (`kill -9`) but not of the machine. `bootID` tells
/// which case applies on resume.
package struct Journal: Codable, Equatable, Sendable {
    static let formatName = "fastpull-journal"
    static let currentVersion = 2

    struct Entry: Codable, Equatable, Sendable {
        var start: Int64
        var end: Int64
        var durable: Int64
        var written: Int64
    }

    var format: String = Journal.formatName
    var version: Int = Journal.currentVersion
    var tool: String = Requests.userAgent
    var url: String
    var finalURL: String
    var size: Int64
    var etag: String?
    var lastModified: String?
    /// The weak ETag the server sent instead of a strong one: it proves no byte the same, but a
    /// different one says the file changed.
    var weakETag: String? = nil
    var checksums: [String]
    /// The kernel's boot identifier when the journal was written.
    var bootID: String?
    var segments: [Entry]
    /// What the run that wrote it learned of its link, for a run resumed soon after.
    var link: LinkMemory? = nil
    /// The SHA-256 of the journal's own encoding without this field: a journal damaged or edited by
    /// hand (to claim bytes that were never written, say) is detected and not trusted.
    var checksum: String? = nil

    /// Why a journal cannot be used.
    enum Problem: Error, Equatable, CustomStringConvertible {
        case unreadable(String)
        case unsupportedVersion(Int)
        case inconsistent(String)

        var description: String {
            switch self {
            case .unreadable(let reason): return "it cannot be read (\(reason))"
            case .unsupportedVersion(let version): return "it has unsupported version \(version)"
            case .inconsistent(let reason): return "it is inconsistent (\(reason))"
            }
        }
    }

    /// What a journal records as its download's URL: the URL, with the part of the file fetched
    /// (`--range`), so that a journal of another part is not resumed.
    package static func downloadURL(_ url: URL, byteRange: ByteRange?) -> String {
        url.absoluteString + (byteRange.map { " bytes=\($0)" } ?? "")
    }

    /// Decodes and checks a journal.
    static func decode(_ data: Data) throws(Problem) -> Journal {
        var journal: Journal
        do {
            journal = try JSONDecoder().decode(Journal.self, from: data)
        } catch {
            throw .unreadable(data.isEmpty ? "empty file" : "not a valid journal")
        }
        guard journal.format == formatName else { throw .unreadable("not a fastpull journal") }
        guard journal.version == currentVersion else { throw .unsupportedVersion(journal.version) }
        guard let checksum = journal.checksum, checksum == journal.contentChecksum() else {
            throw .inconsistent("its checksum does not match its contents: it was damaged or edited")
        }
        // The seal is the file's, not the contents': a decoded journal compares by what it says.
        journal.checksum = nil
        try journal.validate()
        return journal
    }

    /// The journal as JSON, with its ``checksum`` filled in.
    func encoded() -> Data {
        var bare = self
        bare.checksum = nil
        let plain = bare.plainEncoding()
        let checksum = Self.checksum(of: plain)
        // The sealed encoding is the bare one with the checksum's line where its key sorts: right
        // after `bootID` (the first key), or first.
        var sealed = plain
        let line = Data("  \"checksum\" : \"\(checksum)\",\n".utf8)
        let afterOpening = plain.startIndex + 2
        if bootID != nil, let end = plain[afterOpening...].firstIndex(of: UInt8(ascii: "\n")) {
            sealed.insert(contentsOf: line, at: end + 1)
        } else {
            sealed.insert(contentsOf: line, at: afterOpening)
        }
        return sealed
    }

    /// The SHA-256 (hex) of the encoding without ``checksum``.
    func contentChecksum() -> String {
        var bare = self
        bare.checksum = nil
        return Self.checksum(of: bare.plainEncoding())
    }

    private static func checksum(of encoding: Data) -> String {
        let digest = Digest(.sha256)
        encoding.withUnsafeBytes { digest.update($0) }
        return Digest.hex(digest.finalize())
    }

    /// The journal as `JSONEncoder` writes it (pretty-printed, sorted keys, slashes unescaped), byte
    /// for byte, but written by hand: the live journal is saved a hundred times a second, and the
    /// encoder took a millisecond or two for a journal of 512 segments. A string with a control
    /// character (never seen in a URL or a validator) goes to the encoder itself.
    private func plainEncoding() -> Data {
        let strings = [
            tool, url, finalURL, etag ?? "", lastModified ?? "", weakETag ?? "", bootID ?? "", checksum ?? "",
        ]
        guard !(strings + checksums).contains(where: { $0.utf8.contains { $0 < 0x20 } }) else {
            return Self.encoderEncoding(self)
        }
        var text = "{\n"
        func field(_ name: String, _ value: String) { text += "  \"\(name)\" : \(value),\n" }
        func quoted(_ value: String) -> String {
            "\""
                + value.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"")
                + "\""
        }
        if let bootID { field("bootID", quoted(bootID)) }
        if let checksum { field("checksum", quoted(checksum)) }
        field(
            "checksums",
            checksums.isEmpty
                ? "[\n\n  ]"
                : "[\n" + checksums.map { "    " + quoted($0) }.joined(separator: ",\n") + "\n  ]")
        if let etag { field("etag", quoted(etag)) }
        field("finalURL", quoted(finalURL))
        field("format", quoted(format))
        if let lastModified { field("lastModified", quoted(lastModified)) }
        if let link {
            text += "  \"link\" : {\n    \"bytesPerSecond\" : \(link.bytesPerSecond),\n"
            text += "    \"connections\" : \(link.connections),\n    \"learnedAt\" : \(link.learnedAt),\n"
            text += "    \"shared\" : \(link.shared)\n  },\n"
        }
        text += "  \"segments\" : [\n"
        // The segments, the bulk of it, as bytes (string interpolation of each number was most of the
        // time): no escaping is needed in them.
        var bytes = Array(text.utf8)
        bytes.reserveCapacity(bytes.count + segments.count * 110 + 400)
        for (index, entry) in segments.enumerated() {
            Self.append("    {\n      \"durable\" : ", entry.durable, to: &bytes)
            Self.append(",\n      \"end\" : ", entry.end, to: &bytes)
            Self.append(",\n      \"start\" : ", entry.start, to: &bytes)
            Self.append(",\n      \"written\" : ", entry.written, to: &bytes)
            bytes.append(contentsOf: (index == segments.count - 1 ? "\n    }\n" : "\n    },\n").utf8)
        }
        text = segments.isEmpty ? "\n  ],\n" : "  ],\n"
        field("size", String(size))
        field("tool", quoted(tool))
        field("url", quoted(url))
        text += "  \"version\" : \(version)"
        if let weakETag { text += ",\n  \"weakETag\" : \(quoted(weakETag))" }
        text += "\n}"
        bytes.append(contentsOf: text.utf8)
        return Data(bytes)
    }

    /// Appends `prefix`, then `number` in decimal.
    private static func append(_ prefix: StaticString, _ number: Int64, to bytes: inout [UInt8]) {
        prefix.withUTF8Buffer { bytes.append(contentsOf: $0) }
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        var value = number.magnitude
        var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
                count += 1
            } while value > 0
            for position in stride(from: count - 1, through: 0, by: -1) { bytes.append(buffer[position]) }
        }
    }

    /// The same through `JSONEncoder`: the reference the hand-written encoding is tested against.
    static func encoderEncoding(_ journal: Journal) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Encoding plain values cannot fail.
        return (try? encoder.encode(journal)) ?? Data()
    }

    /// ``plainEncoding()``, for tests.
    var handWrittenEncoding: Data { plainEncoding() }

    /// Whether `other` is a journal of the same remote file, at the same size.
    func describesSameFile(as other: Journal) -> Bool {
        url == other.url && size == other.size && etag == other.etag && lastModified == other.lastModified
            && weakETag == other.weakETag
    }

    /// The segments must tile `[0, size)` in order, with `0 <= durable <= written <= length`.
    func validate() throws(Problem) {
        guard size > 0 else { throw .inconsistent("size \(size)") }
        var expected: Int64 = 0
        for (index, entry) in segments.enumerated() {
            guard entry.start == expected, entry.end > entry.start else {
                throw .inconsistent("segment \(index) does not follow the one before it")
            }
            let length = entry.end - entry.start
            guard entry.durable >= 0, entry.durable <= entry.written, entry.written <= length else {
                throw .inconsistent("segment \(index) claims impossible progress")
            }
            expected = entry.end
        }
        guard expected == size else { throw .inconsistent("segments cover \(expected) of \(size) bytes") }
        if let link, !link.isPlausible { throw .inconsistent("its link record is impossible") }
    }

    /// The segments to resume: `written` progress when the machine has not rebooted since the journal
    /// was written (the page cache still holds those bytes), else only `durable` progress.
    func segmentsToResume(currentBootID: String?) -> [Segment] {
        let sameBoot = bootID != nil && bootID == currentBootID
        return segments.map {
            Segment(start: $0.start, end: $0.end, written: sameBoot ? $0.written : $0.durable)
        }
    }

    /// What the run that wrote it learned of its link, when that holds now: learned on this boot, a
    /// short while ago (``LinkMemory/isFresh(now:)``).
    func linkToResume(currentBootID: String?, now: Int64 = LinkMemory.now) -> LinkMemory? {
        guard let link, bootID != nil, bootID == currentBootID, link.isFresh(now: now) else { return nil }
        return link
    }

    /// Bytes the journal lets a resume keep.
    func keptBytes(currentBootID: String?) -> Int64 {
        segmentsToResume(currentBootID: currentBootID).reduce(0) { $0 + $1.written }
    }

    /// Whether this journal describes the same remote file as a fresh probe.
    func matches(_ remote: RemoteFile) -> RemoteComparison {
        guard let size = remote.size, size == self.size else {
            return .changed(
                "its size changed from \(self.size) to \(remote.size.map(String.init) ?? "unknown") bytes")
        }
        if let old = etag, let new = remote.etag, old != new {
            return .changed("its ETag changed from \(old) to \(new)")
        }
        if etag == nil, let old = lastModified, let new = remote.lastModified, old != new {
            return .changed("its Last-Modified changed from \(old) to \(new)")
        }
        if etag != nil, remote.etag == nil {
            return .changed("the server no longer sends the ETag \(etag!)")
        }
        if let old = weakETag, let new = remote.weakETag,
            RemoteFile.opaqueTag(old) != RemoteFile.opaqueTag(new)
        {
            return .changed("its ETag changed from \(old) to \(new)")
        }
        if etag == nil && lastModified == nil {
            return .unverifiable
        }
        return .same
    }

    enum RemoteComparison: Equatable {
        case same
        /// No validator to compare: the bytes may belong to another version.
        case unverifiable
        case changed(String)
    }
}
