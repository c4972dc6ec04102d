import FastpullHTTP
import FoundationEssentials

/// The name a download is saved under when none is given: the server's `Content-Disposition` file
/// name, else the last component of the URL's path, else `index.html` — always made safe to create in
/// the output folder.
package enum OutputName {
    /// The name used when nothing else gives one.
    package static let fallback = "index.html"

    /// The longest name a download may have: a file name holds at most 255 bytes, and the longest of
    /// the files kept beside the output (``JournalStore/longestSuffix``) adds its suffix to it.
    package static let maximumBytes = 255 - JournalStore.longestSuffix.utf8.count

    /// The safe name for `url`, preferring the file name in `contentDisposition`.
    package static func derive(from url: URL, contentDisposition: String?) -> String {
        if let header = contentDisposition, let name = ContentDisposition.fileName(in: header),
            let safe = sanitize(name)
        {
            return safe
        }
        return fromURL(url) ?? fallback
    }

    /// The decoded last component of the URL's path, made safe; nil when there is none (`/`, empty).
    package static func fromURL(_ url: URL) -> String? {
        guard let component = lastComponent(of: url.path(percentEncoded: true)) else { return nil }
        let last = String(component)
        let decoded = last.utf8.contains(UInt8(ascii: "%")) ? (last.percentDecoded ?? last) : last
        return sanitize(decoded)
    }

    /// The last non-empty component of `path` (`/a/b/` gives `b`), found from the end without
    /// splitting the whole path; nil when there is none.
    package static func lastComponent(of path: String) -> Substring? {
        let slash = UInt8(ascii: "/")
        let utf8 = path.utf8
        guard let end = utf8.lastIndex(where: { $0 != slash }) else { return nil }
        let start = utf8[..<end].lastIndex(of: slash).map { utf8.index(after: $0) } ?? utf8.startIndex
        return path[start...end]
    }

    /// `name` made safe to create in a folder, or nil when nothing safe is left.
    ///
    /// The one sanitizer of names from a server or a document (`Content-Disposition`, the URL, a
    /// Metalink file through ``sanitizeRelativePath(_:)``). Only the part after the last `/` or `\` is
    /// kept (so `../../etc/passwd` is `passwd`); control characters (C0, DEL, C1), the Unicode
    /// direction overrides, isolates and marks, and the line and paragraph separators
    /// (``Unicode/Scalar/isControlOrLayout``) are dropped; surrounding
    /// whitespace and leading dots go (no hidden files, no `.` or `..`); and a name longer than
    /// ``maximumBytes`` (room for the `.part` file and journals beside it) is shortened, keeping its
    /// extension.
    package static func sanitize(_ name: String) -> String? {
        if isPlainlySafe(name) { return name }
        // Scalar by scalar, not by Character: `/` followed by a combining mark, or `.` followed by one,
        // is one Character that is neither `/` nor `.`.
        let parts = name.unicodeScalars.split(whereSeparator: { $0 == "/" || $0 == "\\" })
        var scalars = String.UnicodeScalarView()
        for scalar in parts.last ?? Substring.UnicodeScalarView() where !scalar.isControlOrLayout {
            scalars.append(scalar)
        }
        var result = String(scalars).trimmingSpaces()
        while result.unicodeScalars.first == "." {
            result = String(result.unicodeScalars.dropFirst()).trimmingSpaces()
        }
        guard !result.isEmpty else { return nil }
        return shortened(result, toBytes: maximumBytes)
    }

    /// `path`, a relative path of one or more components that a document names (a Metalink file's
    /// `name`), made safe component by component with ``sanitize(_:)``; nil when it is absolute, when
    /// a component is empty, `.` or `..`, or when nothing safe is left of one.
    package static func sanitizeRelativePath(_ path: String) -> String? {
        guard !path.isEmpty, !path.hasPrefix("/") else { return nil }
        var components: [String] = []
        for component in path.split(separator: "/", omittingEmptySubsequences: false) {
            guard !component.isEmpty, component != ".", component != "..",
                let safe = sanitize(String(component))
            else { return nil }
            components.append(safe)
        }
        return components.joined(separator: "/")
    }

    /// Whether `name` needs none of ``sanitize(_:)``'s changes, decided in one pass over its bytes:
    /// printable ASCII without `/` or `\`, neither starting with a dot or a space nor ending with a
    /// space, and short enough. Most names are; the others take the full path.
    private static func isPlainlySafe(_ name: String) -> Bool {
        let bytes = name.utf8
        guard let first = bytes.first, let last = bytes.last, bytes.count <= maximumBytes,
            first != UInt8(ascii: "."), first != UInt8(ascii: " "), last != UInt8(ascii: " ")
        else { return false }
        return bytes.allSatisfy { byte in
            (0x20...0x7E).contains(byte) && byte != UInt8(ascii: "/") && byte != UInt8(ascii: "\\")
        }
    }

    /// `name` cut to at most `limit` UTF-8 bytes on a character boundary (on a scalar boundary when its
    /// first character alone is too long), keeping a short extension and no whitespace at the end.
    private static func shortened(_ name: String, toBytes limit: Int) -> String {
        guard name.utf8.count > limit else { return name }
        var stem = Substring(name)
        var suffix = ""
        // A Character can be any number of bytes (a letter with hundreds of combining marks): an
        // extension is short in bytes too.
        if let dot = name.lastIndex(of: "."), name.distance(from: dot, to: name.endIndex) <= 16,
            name.utf8.distance(from: dot, to: name.endIndex) <= 64
        {
            stem = name[..<dot]
            suffix = String(name[dot...])
        }
        var kept = ""
        for character in stem {
            if kept.utf8.count + String(character).utf8.count + suffix.utf8.count > limit { break }
            kept.append(character)
        }
        if kept.isEmpty {
            for scalar in stem.unicodeScalars {
                if kept.utf8.count + String(scalar).utf8.count + suffix.utf8.count > limit { break }
                kept.unicodeScalars.append(scalar)
            }
        }
        // The cut may fall just after a space.
        return (kept + suffix).trimmingSpaces()
    }
}

/// Reads the file name out of a `Content-Disposition` header (RFC 6266): `filename*` (RFC 8187,
/// `UTF-8''%E2%82%AC.txt`, or ISO-8859-1) is preferred over `filename`, which may be a quoted string.
/// The result is the server's text, not yet safe: pass it through ``OutputName/sanitize(_:)``.
package enum ContentDisposition {
    /// The file name the header gives, or nil.
    package static func fileName(in header: String) -> String? {
        let parameters = parameters(of: header)
        if let extended = parameters.last(where: { $0.name == "filename*" }),
            let decoded = decodeExtended(extended.value)
        {
            return decoded
        }
        return parameters.last(where: { $0.name == "filename" })?.value
    }

    /// The `name=value` parameters after the disposition type, names lowercased, quoted strings
    /// unquoted. Malformed parameters are skipped.
    package static func parameters(of header: String) -> [(name: String, value: String)] {
        var result: [(name: String, value: String)] = []
        var characters = Substring(header)
        // Skip the disposition type.
        guard let semicolon = characters.firstIndex(of: ";") else { return [] }
        characters = characters[characters.index(after: semicolon)...]
        while !characters.isEmpty {
            characters = characters.drop(while: { $0 == " " || $0 == "\t" || $0 == ";" })
            let name = characters.prefix(while: { $0 != "=" && $0 != ";" })
            characters = characters.dropFirst(name.count)
            guard characters.first == "=" else {
                characters = characters.drop(while: { $0 != ";" })
                continue
            }
            characters = characters.dropFirst()
            characters = characters.drop(while: { $0 == " " || $0 == "\t" })
            var value = ""
            if characters.first == "\"" {
                characters = characters.dropFirst()
                var closed = false
                while let character = characters.first {
                    characters = characters.dropFirst()
                    if character == "\\", let escaped = characters.first {
                        value.append(escaped)
                        characters = characters.dropFirst()
                    } else if character == "\"" {
                        closed = true
                        break
                    } else {
                        value.append(character)
                    }
                }
                characters = characters.drop(while: { $0 != ";" })
                guard closed else { continue }
            } else {
                let token = characters.prefix(while: { $0 != ";" })
                characters = characters.dropFirst(token.count)
                value = token.trimmingSpaces()
            }
            let key = name.trimmingSpaces().lowercased()
            if !key.isEmpty { result.append((key, value)) }
        }
        return result
    }

    /// Decodes an RFC 8187 value: `charset'language'percent-encoded`; UTF-8 and ISO-8859-1 only.
    static func decodeExtended(_ value: String) -> String? {
        let parts = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let charset = parts[0].lowercased()
        var bytes: [UInt8] = []
        var iterator = parts[2].utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(Digest.hexDigit),
                    let low = iterator.next().flatMap(Digest.hexDigit)
                else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        switch charset {
        case "utf-8":
            return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1":
            return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        default:
            return nil
        }
    }
}
