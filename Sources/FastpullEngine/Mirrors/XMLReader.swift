/// A small, strict reader of XML 1.0 documents in UTF-8 with namespaces, for Metalink files: it
/// reports elements (with their namespace and attributes), their text and their ends, in document
/// order, and refuses a document that is not well-formed.
///
/// What Metalink does not use is refused rather than half-read: a document type with declarations
/// (`<!DOCTYPE x [ … ]>`, where entity expansion attacks live), entities other than XML's five and
/// character references, and encodings other than UTF-8. Comments and processing instructions are
/// skipped; CDATA sections are text.
package struct XMLReader {
    /// What the reader met.
    package enum Event {
        /// An element began. `attributes` holds the unprefixed attributes by name and prefixed ones by
        /// their qualified name; namespace declarations are not among them.
        case start(name: String, namespace: String?, attributes: [String: String])
        /// Character data (entities decoded); an element's text may come in several pieces.
        case text(String)
        /// An element ended.
        case end(name: String, namespace: String?)
    }

    /// Why a document is not well-formed, and the line where that was seen.
    package struct Failure: Error, Equatable {
        package var line: Int
        package var reason: String
    }

    private let bytes: [UInt8]
    private var position = 0
    /// Open elements: qualified name, then the namespace scope each opened.
    private var open: [(name: [UInt8], namespaces: [String: String])] = []

    /// Reads `document`, handing each event to `visit` until it returns false (then the reading
    /// stops, with no error) or the document ends.
    package static func read(_ document: some Collection<UInt8>, _ visit: (Event) -> Bool) throws(Failure) {
        var reader = XMLReader(bytes: Array(document))
        try reader.run(visit)
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private mutating func run(_ visit: (Event) -> Bool) throws(Failure) {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        guard String(validating: bytes[position...], as: UTF8.self) != nil else {
            throw Failure(line: 1, reason: "it is not UTF-8 text")
        }
        var sawRoot = false
        if starts(with: "<?xml") { try declaration() }
        while position < bytes.count {
            if open.isEmpty {
                skipSpace()
                guard position < bytes.count else { break }
                guard bytes[position] == ascii("<") else {
                    throw failure(sawRoot ? "text after the root element" : "text before the root element")
                }
            }
            if bytes[position] != ascii("<") {
                let text = try characters()
                if !visit(.text(text)) { return }
            } else if starts(with: "<!--") {
                try skip(past: "-->", what: "comment")
            } else if starts(with: "<?") {
                try skip(past: "?>", what: "processing instruction")
            } else if starts(with: "<![CDATA[") {
                guard !open.isEmpty else { throw failure("a CDATA section outside the root element") }
                position += 9
                let start = position
                try skip(past: "]]>", what: "CDATA section")
                if !visit(.text(String(decoding: bytes[start..<position - 3], as: UTF8.self))) { return }
            } else if starts(with: "<!DOCTYPE") {
                guard !sawRoot, open.isEmpty else { throw failure("a document type inside the document") }
                try documentType()
            } else if starts(with: "</") {
                position += 2
                let name = try self.name()
                skipSpace()
                try expect(">")
                guard let top = open.popLast(), top.name == name else {
                    throw failure(
                        "the end tag </\(String(decoding: name, as: UTF8.self))> matches no open element")
                }
                let (local, namespace) = try resolve(name, in: top.namespaces, isElement: true)
                if !visit(.end(name: local, namespace: namespace)) { return }
            } else {
                guard open.isEmpty ? !sawRoot : true else { throw failure("a second root element") }
                sawRoot = true
                if try !startTag(visit) { return }
            }
        }
        guard open.isEmpty else {
            throw failure("the document ends inside <\(String(decoding: open.last!.name, as: UTF8.self))>")
        }
        guard sawRoot else { throw failure("the document has no element") }
    }

    /// `<?xml version="1.0" encoding="…"?>`: only UTF-8 (or its subset ASCII) is read.
    private mutating func declaration() throws(Failure) {
        let start = position
        try skip(past: "?>", what: "XML declaration")
        let text = String(decoding: bytes[start..<position], as: UTF8.self).lowercased()
        guard let range = text.firstRange(of: "encoding") else { return }
        let rest = text[range.upperBound...].drop { $0 == " " || $0 == "=" || $0 == "\"" || $0 == "'" }
        let encoding = rest.prefix { $0 != "\"" && $0 != "'" }
        guard ["utf-8", "utf8", "us-ascii", "ascii"].contains(String(encoding)) else {
            throw failure("the encoding '\(encoding)' is not UTF-8")
        }
    }

    /// `<!DOCTYPE name …>` without declarations is skipped; one with an internal subset is refused.
    private mutating func documentType() throws(Failure) {
        var quote: UInt8?
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == ascii("\"") || byte == ascii("'") {
                quote = byte
            } else if byte == ascii("[") {
                throw failure("a document type with declarations, which Metalink files never need")
            } else if byte == ascii(">") {
                return
            }
        }
        throw failure("the document type never ends")
    }

    /// Reads a start tag at `<`, reports it, and for an empty element (`<a/>`) its end too. False
    /// when `visit` asked to stop.
    private mutating func startTag(_ visit: (Event) -> Bool) throws(Failure) -> Bool {
        position += 1
        let name = try self.name()
        var raw: [(name: [UInt8], value: String)] = []
        var namespaces = open.last?.namespaces ?? [:]
        while true {
            let spaced = skipSpace()
            guard position < bytes.count else { throw failure("the document ends inside a tag") }
            if bytes[position] == ascii(">") || starts(with: "/>") { break }
            guard spaced else { throw failure("attributes without space between them") }
            let attribute = try self.name()
            skipSpace()
            try expect("=")
            skipSpace()
            let value = try quoted()
            guard !raw.contains(where: { $0.name == attribute }) else {
                throw failure(
                    "the attribute '\(String(decoding: attribute, as: UTF8.self))' twice in one tag")
            }
            raw.append((attribute, value))
            if attribute == Array("xmlns".utf8) {
                namespaces[""] = value
            } else if attribute.starts(with: Array("xmlns:".utf8)) {
                guard !value.isEmpty else { throw failure("a namespace prefix bound to nothing") }
                namespaces[String(decoding: attribute.dropFirst(6), as: UTF8.self)] = value
            }
        }
        var attributes: [String: String] = [:]
        for (attribute, value) in raw
        where attribute != Array("xmlns".utf8) && !attribute.starts(with: Array("xmlns:".utf8)) {
            if let colon = attribute.firstIndex(of: ascii(":")) {
                let prefix = String(decoding: attribute[..<colon], as: UTF8.self)
                guard prefix == "xml" || namespaces[prefix] != nil else {
                    throw failure("the namespace prefix '\(prefix)' is not declared")
                }
            }
            attributes[String(decoding: attribute, as: UTF8.self)] = value
        }
        let (local, namespace) = try resolve(name, in: namespaces, isElement: true)
        if starts(with: "/>") {
            position += 2
            return visit(.start(name: local, namespace: namespace, attributes: attributes))
                && visit(.end(name: local, namespace: namespace))
        }
        position += 1
        open.append((name, namespaces))
        return visit(.start(name: local, namespace: namespace, attributes: attributes))
    }

    /// The local name and namespace of a qualified element name.
    private func resolve(_ name: [UInt8], in namespaces: [String: String], isElement: Bool) throws(Failure)
        -> (
            String, String?
        )
    {
        guard let colon = name.firstIndex(of: ascii(":")) else {
            let namespace = namespaces[""]
            return (String(decoding: name, as: UTF8.self), namespace?.isEmpty == true ? nil : namespace)
        }
        let prefix = String(decoding: name[..<colon], as: UTF8.self)
        guard let namespace = namespaces[prefix] else {
            throw failure("the namespace prefix '\(prefix)' is not declared")
        }
        return (String(decoding: name[(colon + 1)...], as: UTF8.self), namespace)
    }

    /// Character data up to the next `<`, with its references decoded.
    private mutating func characters() throws(Failure) -> String {
        var text: [UInt8] = []
        while position < bytes.count, bytes[position] != ascii("<") {
            if bytes[position] == ascii("&") {
                text += try reference()
            } else {
                text.append(bytes[position])
                position += 1
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// A quoted attribute value, references decoded and white space normalised as XML says.
    private mutating func quoted() throws(Failure) -> String {
        guard position < bytes.count, bytes[position] == ascii("\"") || bytes[position] == ascii("'") else {
            throw failure("an attribute value without quotes")
        }
        let quote = bytes[position]
        position += 1
        var value: [UInt8] = []
        while true {
            guard position < bytes.count else { throw failure("the document ends inside an attribute value") }
            let byte = bytes[position]
            if byte == quote { break }
            if byte == ascii("<") { throw failure("'<' inside an attribute value") }
            if byte == ascii("&") {
                value += try reference()
                continue
            }
            value.append(
                byte == ascii("\t") || byte == ascii("\n") || byte == ascii("\r") ? ascii(" ") : byte)
            position += 1
        }
        position += 1
        return String(decoding: value, as: UTF8.self)
    }

    /// `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;`, `&#NN;` or `&#xNN;` at `&`, as UTF-8.
    private mutating func reference() throws(Failure) -> [UInt8] {
        guard let end = bytes[position...].prefix(12).firstIndex(of: ascii(";")) else {
            throw failure("an '&' that starts no reference")
        }
        let body = String(decoding: bytes[(position + 1)..<end], as: UTF8.self)
        position = end + 1
        switch body {
        case "amp": return [ascii("&")]
        case "lt": return [ascii("<")]
        case "gt": return [ascii(">")]
        case "quot": return [ascii("\"")]
        case "apos": return [ascii("'")]
        default:
            let number: UInt32? =
                body.hasPrefix("#x")
                ? UInt32(body.dropFirst(2), radix: 16)
                : body.hasPrefix("#") ? UInt32(body.dropFirst(), radix: 10) : nil
            guard let number, number != 0, let scalar = Unicode.Scalar(number) else {
                throw failure("the reference '&\(body);', which is not one of XML's")
            }
            return Array(String(Character(scalar)).utf8)
        }
    }

    /// An XML name (element or attribute, possibly prefixed).
    private mutating func name() throws(Failure) -> [UInt8] {
        let start = position
        while position < bytes.count {
            let byte = bytes[position]
            let isStart =
                (byte >= ascii("a") && byte <= ascii("z")) || (byte >= ascii("A") && byte <= ascii("Z"))
                || byte == ascii("_") || byte == ascii(":") || byte >= 0x80
            let isPart =
                isStart || (byte >= ascii("0") && byte <= ascii("9")) || byte == ascii("-")
                || byte == ascii(".")
            guard position == start ? isStart : isPart else { break }
            position += 1
        }
        guard position > start else { throw failure("a tag without a valid name") }
        return Array(bytes[start..<position])
    }

    /// Skips white space; true when there was some.
    @discardableResult
    private mutating func skipSpace() -> Bool {
        let start = position
        while position < bytes.count,
            bytes[position] == ascii(" ") || bytes[position] == ascii("\n") || bytes[position] == ascii("\r")
                || bytes[position] == ascii("\t")
        {
            position += 1
        }
        return position > start
    }

    private mutating func skip(past terminator: String, what: String) throws(Failure) {
        let pattern = Array(terminator.utf8)
        while position < bytes.count {
            if bytes[position...].starts(with: pattern) {
                position += pattern.count
                return
            }
            position += 1
        }
        throw failure("the document ends inside a \(what)")
    }

    private mutating func expect(_ character: Character) throws(Failure) {
        guard position < bytes.count, bytes[position] == character.asciiValue! else {
            throw failure("'\(character)' expected")
        }
        position += 1
    }

    private func starts(with text: String) -> Bool {
        bytes[position...].starts(with: text.utf8)
    }

    private func ascii(_ character: Unicode.Scalar) -> UInt8 { UInt8(ascii: character) }

    private func failure(_ reason: String) -> Failure {
        let line = 1 + bytes[..<min(position, bytes.count)].reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
        return Failure(line: line, reason: reason)
    }
}
