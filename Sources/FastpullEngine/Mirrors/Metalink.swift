import FastpullHTTP
import FoundationEssentials

/// A Metalink document (RFC 5854, `.meta4`, media type ``mediaType``): the files it describes, each
/// with its size, whole-file hashes, piece hashes and the URLs it can be fetched from, in order of
/// preference.
///
/// ```swift
/// let file = try Metalink(parsing: data).files[0]
/// let report = try await Fastpull.download(from: file.urls[0], to: folder.appending(path: file.name),
///                                          configuration: file.configuration())
/// ```
public struct Metalink: Sendable, Hashable {
    /// `application/metalink4+xml`.
    public static let mediaType = "application/metalink4+xml"

    /// One file the document describes.
    public struct File: Sendable, Hashable {
        /// The file's name: a relative path of one or more components, never absolute and never
        /// with `..`, each component made safe as a server's `Content-Disposition` name is (no
        /// control characters, no direction overrides, no leading dots).
        public var name: String
        /// Its size in bytes, when the document gives it.
        public var size: Int64?
        /// Whole-file hashes the document gives, strongest first (sha512, sha256, sha1, md5); types
        /// Fastpull does not compute are left out.
        public var checksums: [Checksum]
        /// Hashes of its pieces, the strongest set when there are several.
        public var pieces: PieceHashes?
        /// Its http and https URLs, most preferred first (lowest `priority`; those without one last,
        /// in document order). Other schemes (ftp, torrents) are left out.
        public var sources: [Source]

        /// The URLs of ``sources``, most preferred first.
        public var urls: [URL] { sources.map(\.url) }

        /// `base` set up to fetch this file: the URLs after the first as mirrors, the strongest
        /// whole-file hash as the checksum (reported as `document`'s), the piece hashes and the size.
        public func configuration(_ base: Configuration = .init(), document: String = "the Metalink file")
            -> Configuration
        {
            var configuration = base
            configuration.sources.mirrors += urls.dropFirst()
            if let strongest = checksums.first {
                configuration.integrity.describedChecksums = .init(document: document, checksums: [strongest])
            }
            configuration.integrity.pieceHashes = pieces ?? base.integrity.pieceHashes
            configuration.integrity.expectedSize = size ?? base.integrity.expectedSize
            return configuration
        }
    }

    /// A URL of a file, with the document's preference for it.
    public struct Source: Sendable, Hashable {
        /// The URL.
        public var url: URL
        /// 1 (most preferred) to 999999, when given.
        public var priority: Int?
        /// The ISO 3166-1 country code of its location, when given.
        public var location: String?
    }

    /// The files, in document order.
    public var files: [File]

    /// The namespace of Metalink 4.
    static let namespace = "urn:ietf:params:xml:ns:metalink"

    /// Parses a Metalink 4 document.
    ///
    /// - Throws: ``FastpullError/Code/usage`` when it is not well-formed XML, not Metalink 4 (the
    ///   older Metalink 3 is named as such), or describes a file without a usable URL, with an unsafe
    ///   name, or with malformed hashes.
    public init(parsing data: Data) throws(FastpullError) {
        var reader = MetalinkReader()
        do {
            try XMLReader.read(data) { reader.take($0) }
        } catch {
            throw FastpullError(
                .usage, "the Metalink file is not well-formed XML at line \(error.line): \(error.reason)")
        }
        if let problem = reader.problem { throw FastpullError(.usage, "the Metalink file \(problem)") }
        guard reader.sawRoot else {
            throw FastpullError(
                .usage, "the Metalink file has no <metalink> element of Metalink 4 (RFC 5854)")
        }
        var files: [File] = []
        for draft in reader.files {
            files.append(try Self.file(from: draft))
        }
        guard !files.isEmpty else { throw FastpullError(.usage, "the Metalink file describes no file") }
        var names = Set<String>()
        for file in files where !names.insert(file.name).inserted {
            throw FastpullError(.usage, "the Metalink file describes '\(file.name)' twice")
        }
        self.files = files
    }

    /// Whether `contentType` (a `Content-Type` field) is Metalink 4's media type.
    public static func isMediaType(_ contentType: String?) -> Bool {
        // Most types are not: one that does not even hold its length in bytes is answered at once.
        guard let contentType, contentType.utf8.count >= mediaType.utf8.count else { return false }
        let type = contentType.split(separator: ";").first.map { $0.trimmingSpaces() }
        return type?.lowercased() == mediaType
    }

    private static func file(from draft: MetalinkReader.FileDraft) throws(FastpullError) -> File {
        guard let name = OutputName.sanitizeRelativePath(draft.name) else {
            throw FastpullError(
                .usage, "the Metalink file names a file '\(draft.name)', which is not a safe relative path")
        }
        var size: Int64?
        if let text = draft.size {
            guard let value = Int64(text.trimmingSpacesAndLines()), value >= 0 else {
                throw FastpullError(.usage, "the Metalink file gives '\(name)' the size '\(text)'")
            }
            size = value
        }
        var checksums: [Checksum] = []
        for (type, value) in draft.hashes {
            guard let algorithm = Self.algorithm(type) else { continue }
            let hex = value.trimmingSpacesAndLines()
            guard Digest.isHex(hex, count: 2 * algorithm.digestLength) else {
                throw FastpullError(.usage, "the Metalink file's \(type) hash of '\(name)' is '\(hex)'")
            }
            checksums.append(Checksum(algorithm, hex: hex.lowercased()))
        }
        checksums.sort { $0.digestAlgorithm.strength > $1.digestAlgorithm.strength }
        var pieces: PieceHashes?
        for set in draft.pieces {
            guard let algorithm = Self.algorithm(set.type) else { continue }
            guard let length = Int64(set.length), length > 0 else {
                throw FastpullError(
                    .usage, "the Metalink file gives '\(name)' the piece length '\(set.length)'")
            }
            var hashes: [Checksum] = []
            for value in set.hashes {
                let hex = value.trimmingSpacesAndLines()
                guard Digest.isHex(hex, count: 2 * algorithm.digestLength) else {
                    throw FastpullError(
                        .usage, "the Metalink file's \(set.type) piece hash of '\(name)' is '\(hex)'")
                }
                hashes.append(Checksum(algorithm, hex: hex.lowercased()))
            }
            if let current = pieces?.hashes.first, current.digestAlgorithm.strength >= algorithm.strength {
                continue
            }
            pieces = PieceHashes(length: length, hashes: hashes)
        }
        var sources: [(Source, Int)] = []
        for (order, url) in draft.urls.enumerated() {
            let text = url.text.trimmingSpacesAndLines()
            guard let parsed = URL(string: text), let scheme = parsed.scheme?.lowercased(),
                scheme == "http" || scheme == "https", parsed.host() != nil
            else { continue }
            let priority = url.priority.flatMap { Int($0) }.flatMap { (1...999_999).contains($0) ? $0 : nil }
            sources.append((Source(url: parsed, priority: priority, location: url.location), order))
        }
        sources.sort { a, b in
            let left = a.0.priority ?? 1_000_000
            let right = b.0.priority ?? 1_000_000
            return left != right ? left < right : a.1 < b.1
        }
        guard !sources.isEmpty else {
            throw FastpullError(.usage, "the Metalink file gives '\(name)' no http or https URL")
        }
        return File(
            name: name, size: size, checksums: checksums, pieces: pieces, sources: sources.map(\.0))
    }

    /// The algorithm of an IANA hash name (`sha-256`, `sha-1`, `md5`); nil for others.
    static func algorithm(_ type: String) -> Digest.Algorithm? {
        switch type.lowercased() {
        case "sha-512": return .sha512
        case "sha-256": return .sha256
        case "sha-1": return .sha1
        case "md5": return .md5
        default: return nil
        }
    }

}

/// The reading side of ``Metalink/init(parsing:)``: collects each `<file>`'s fields as text.
private struct MetalinkReader {
    struct PieceDraft {
        var type: String
        var length: String
        var hashes: [String] = []
    }

    struct URLDraft {
        var text = ""
        var priority: String?
        var location: String?
    }

    struct FileDraft {
        var name: String
        var size: String?
        var hashes: [(String, String)] = []
        var pieces: [PieceDraft] = []
        var urls: [URLDraft] = []
    }

    var files: [FileDraft] = []
    var sawRoot = false
    var problem: String?
    private var file: FileDraft?
    private var piece: PieceDraft?
    private var text = ""
    private var attributes: [String: String] = [:]

    /// Takes one event of the document; false when the document cannot be used (``problem`` says why).
    mutating func take(_ event: XMLReader.Event) -> Bool {
        switch event {
        case .start(let element, let namespace, let attributes):
            return start(element, namespace: namespace, attributes: attributes)
        case .text(let string):
            text += string
        case .end(let element, let namespace):
            end(element, namespace: namespace)
        }
        return true
    }

    private mutating func start(_ element: String, namespace: String?, attributes: [String: String]) -> Bool {
        text = ""
        self.attributes = attributes
        if element == "metalink" {
            guard namespace == Metalink.namespace else {
                problem =
                    namespace == "http://www.metalinker.org/"
                    ? "is Metalink 3; only Metalink 4 (RFC 5854, .meta4) is read"
                    : "has a <metalink> element of another namespace (\(namespace ?? "none")), not Metalink 4"
                return false
            }
            sawRoot = true
            return true
        }
        guard sawRoot, namespace == Metalink.namespace else { return true }
        switch element {
        case "file":
            guard let name = attributes["name"] else {
                problem = "has a <file> without a name"
                return false
            }
            file = FileDraft(name: name)
        case "pieces" where file != nil:
            piece = PieceDraft(type: attributes["type"] ?? "", length: attributes["length"] ?? "")
        default:
            break
        }
        return true
    }

    private mutating func end(_ element: String, namespace: String?) {
        defer { text = "" }
        guard sawRoot, namespace == Metalink.namespace else { return }
        switch element {
        case "file":
            if let file { files.append(file) }
            file = nil
        case "size":
            file?.size = text
        case "hash":
            if piece != nil {
                piece?.hashes.append(text)
            } else {
                file?.hashes.append((attributes["type"] ?? "", text))
            }
        case "pieces":
            if let piece { file?.pieces.append(piece) }
            piece = nil
        case "url":
            file?.urls.append(
                URLDraft(text: text, priority: attributes["priority"], location: attributes["location"]))
        default:
            break
        }
    }
}
