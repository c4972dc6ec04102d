import FastpullNet

/// An ordered list of HTTP header fields with case-insensitive lookup by name.
///
/// Fields keep the order and spelling in which they were added or received; lookups compare names
/// ASCII case-insensitively (RFC 9110 §5.1). Repeated names are kept as separate fields.
package struct HTTPHeaders: Sendable, Equatable, Sequence {
    package typealias Element = (name: String, value: String)

    private var fields: [Element]

    package init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields
    }

    /// Number of fields, counting repeated names separately.
    package var count: Int { fields.count }

    package var isEmpty: Bool { fields.isEmpty }

    /// Appends a field after all existing ones.
    package mutating func add(name: String, value: String) {
        fields.append((name: name, value: value))
    }

    /// Continues the last field's value with `text` after a space: an obs-fold line (RFC 9112 §5.2).
    /// Returns false when there is no field to continue.
    package mutating func continueLast(with text: String) -> Bool {
        guard !fields.isEmpty else { return false }
        let last = fields.count - 1
        fields[last].value = fields[last].value.isEmpty ? text : fields[last].value + " " + text
        return true
    }

    /// Removes every field called `name` (case-insensitive).
    package mutating func remove(name: String) {
        fields.removeAll { Self.namesEqual($0.name, name) }
    }

    /// Replaces every field called `name` with a single field holding `value`, keeping the position of
    /// the first one (or appending when there was none).
    package mutating func replaceOrAdd(name: String, value: String) {
        guard let first = fields.firstIndex(where: { Self.namesEqual($0.name, name) }) else {
            fields.append((name: name, value: value))
            return
        }
        fields[first].value = value
        var index = fields.count - 1
        while index > first {
            if Self.namesEqual(fields[index].name, name) {
                fields.remove(at: index)
            }
            index -= 1
        }
    }

    /// The value of the first field called `name` (case-insensitive), or nil.
    package subscript(name: String) -> String? {
        for field in fields where Self.namesEqual(field.name, name) {
            return field.value
        }
        return nil
    }

    /// Whether at least one field is called `name` (case-insensitive).
    package func contains(name: String) -> Bool {
        fields.contains { Self.namesEqual($0.name, name) }
    }

    /// The values of every field called `name` (case-insensitive), in order.
    package func values(for name: String) -> [String] {
        var result: [String] = []
        for field in fields where Self.namesEqual(field.name, name) {
            result.append(field.value)
        }
        return result
    }

    /// The comma-separated list elements of every field called `name`, in order, with OWS trimmed and
    /// empty elements dropped (RFC 9110 §5.6.1). `Connection: keep-alive, Upgrade` gives
    /// `["keep-alive", "Upgrade"]`. Does not understand quoted strings; use it for token lists only.
    package func listElements(for name: String) -> [Substring] {
        var result: [Substring] = []
        for field in fields where Self.namesEqual(field.name, name) {
            for element in field.value.utf8.split(separator: UInt8(ascii: ",")) {
                let trimmed = Self.trimmingWhitespace(Substring(element))
                if !trimmed.isEmpty {
                    result.append(trimmed)
                }
            }
        }
        return result
    }

    /// Whether the token list of the fields called `name` contains `token` (both case-insensitive).
    package func containsToken(_ token: String, in name: String) -> Bool {
        listElements(for: name).contains { Self.namesEqual($0, token) }
    }

    package func makeIterator() -> IndexingIterator<[Element]> {
        fields.makeIterator()
    }

    /// Fields are equal when they have the same order, names (case-insensitive) and values (exact).
    package static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        guard lhs.fields.count == rhs.fields.count else { return false }
        for (left, right) in zip(lhs.fields, rhs.fields) {
            guard left.value == right.value, namesEqual(left.name, right.name) else { return false }
        }
        return true
    }

    // MARK: - Helpers shared by the HTTP layer

    /// ASCII case-insensitive comparison, without allocating. Names of other lengths differ at once:
    /// a lookup compares its name with every field's, and most have another length.
    package static func namesEqual<A: StringProtocol, B: StringProtocol>(_ lhs: A, _ rhs: B) -> Bool {
        guard lhs.utf8.count == rhs.utf8.count else { return false }
        var left = lhs.utf8.makeIterator()
        var right = rhs.utf8.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil):
                return true
            case (let l?, let r?):
                if l != r && asciiLowercase(l) != asciiLowercase(r) {
                    return false
                }
            default:
                return false
            }
        }
    }

    @inline(__always)
    package static func asciiLowercase(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    /// Whether `byte` is a `tchar` (RFC 9110 §5.6.2), the characters of a field name or token.
    @inline(__always)
    package static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Whether `string` is a non-empty token (RFC 9110 §5.6.2): usable as a field name or method.
    package static func isToken<S: StringProtocol>(_ string: S) -> Bool {
        !string.isEmpty && string.utf8.allSatisfy(isTokenCharacter)
    }

    /// Whether `string` is a valid field value: no control characters other than HTAB and no leading
    /// or trailing whitespace (RFC 9110 §5.5).
    package static func isValidFieldValue(_ string: String) -> Bool {
        let bytes = string.utf8
        if let first = bytes.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
            return false
        }
        if let last = bytes.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") {
            return false
        }
        return bytes.allSatisfy { $0 == UInt8(ascii: "\t") || !isControl($0) }
    }

    /// CTL: 0x00–0x1F and 0x7F.
    @inline(__always)
    package static func isControl(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == 0x7F
    }

    /// `string` without leading and trailing SP and HTAB (OWS).
    package static func trimmingWhitespace(_ string: Substring) -> Substring {
        let bytes = string.utf8
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, bytes[start] == UInt8(ascii: " ") || bytes[start] == UInt8(ascii: "\t") {
            bytes.formIndex(after: &start)
        }
        while start < end {
            let before = bytes.index(before: end)
            guard bytes[before] == UInt8(ascii: " ") || bytes[before] == UInt8(ascii: "\t") else { break }
            end = before
        }
        return string[start..<end]
    }
}
