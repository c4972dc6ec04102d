import FastpullHTTP

/// A parser for structured-field dictionaries (RFC 8941 §4.2.2), the syntax of `Repr-Digest` and
/// `Content-Digest` (RFC 9530): `sha-256=:BASE64:, sha-512=:BASE64:;param=1`.
///
/// Parses the whole grammar so that any well-formed member can be skipped, but keeps only what digest
/// fields need: each member's key and the kind of its value. Byte sequences keep their base64 text, so
/// that a member whose base64 does not decode can be reported on its own.
package enum StructuredFieldDictionary {
    /// A member's value, reduced to what digest fields need.
    enum Value: Sendable, Equatable {
        /// `:BASE64:`, the text between the colons (characters `A–Z a–z 0–9 + / =` only).
        case byteSequence(String)
        /// An inner list `( … )`.
        case innerList
        /// An integer, decimal, string, token, boolean or date.
        case otherItem
    }

    /// The members of the dictionary in `fieldValues` (several field lines are one dictionary joined by
    /// commas, RFC 8941 §4.2), in order of first appearance, a repeated key keeping its last value;
    /// nil when the text is not a dictionary.
    static func parse(_ fieldValues: [String]) -> [(key: String, value: Value)]? {
        var parser = Parser(Array(fieldValues.joined(separator: ", ").utf8))
        return parser.dictionary()
    }

    private struct Parser {
        private let input: [UInt8]
        private var position = 0

        init(_ input: [UInt8]) {
            self.input = input
        }

        private var next: UInt8? { position < input.count ? input[position] : nil }

        mutating func dictionary() -> [(key: String, value: Value)]? {
            skipSpaces()
            var members: [(key: String, value: Value)] = []
            guard next != nil else {
                return members
            }
            while true {
                guard let key = key() else { return nil }
                let value: Value
                if next == UInt8(ascii: "=") {
                    position += 1
                    guard let member = itemOrInnerList() else { return nil }
                    value = member
                } else {
                    guard parameters() else { return nil }
                    value = .otherItem
                }
                if let existing = members.firstIndex(where: { $0.key == key }) {
                    members[existing].value = value
                } else {
                    members.append((key: key, value: value))
                }
                skipWhitespace()
                guard next != nil else { return members }
                guard next == UInt8(ascii: ",") else { return nil }
                position += 1
                skipWhitespace()
                guard next != nil else { return nil }
            }
        }

        private mutating func itemOrInnerList() -> Value? {
            if next == UInt8(ascii: "(") {
                position += 1
                while true {
                    skipSpaces()
                    if next == UInt8(ascii: ")") {
                        position += 1
                        return parameters() ? .innerList : nil
                    }
                    guard bareItem() != nil, parameters() else { return nil }
                    guard next == UInt8(ascii: " ") || next == UInt8(ascii: ")") else { return nil }
                }
            }
            guard let item = bareItem(), parameters() else { return nil }
            return item
        }

        /// `*( ";" *SP key [ "=" bare-item ] )`
        private mutating func parameters() -> Bool {
            while next == UInt8(ascii: ";") {
                position += 1
                skipSpaces()
                guard key() != nil else { return false }
                if next == UInt8(ascii: "=") {
                    position += 1
                    guard bareItem() != nil else { return false }
                }
            }
            return true
        }

        private mutating func key() -> String? {
            guard let first = next, Self.isLowercaseAlpha(first) || first == UInt8(ascii: "*") else {
                return nil
            }
            let start = position
            while let byte = next,
                Self.isLowercaseAlpha(byte) || Self.isDigit(byte) || byte == UInt8(ascii: "_")
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "*")
            {
                position += 1
            }
            return String(decoding: input[start..<position], as: UTF8.self)
        }

        private mutating func bareItem() -> Value? {
            guard let first = next else { return nil }
            switch first {
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return number() ? .otherItem : nil
            case UInt8(ascii: "\""):
                return string() ? .otherItem : nil
            case UInt8(ascii: "*"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "a")...UInt8(ascii: "z"):
                position += 1
                while let byte = next,
                    HTTPHeaders.isTokenCharacter(byte) || byte == UInt8(ascii: ":")
                        || byte == UInt8(ascii: "/")
                {
                    position += 1
                }
                return .otherItem
            case UInt8(ascii: ":"):
                position += 1
                let start = position
                while let byte = next, byte != UInt8(ascii: ":") {
                    guard Self.isBase64Character(byte) else { return nil }
                    position += 1
                }
                guard next == UInt8(ascii: ":") else { return nil }
                let text = String(decoding: input[start..<position], as: UTF8.self)
                position += 1
                return .byteSequence(text)
            case UInt8(ascii: "?"):
                position += 1
                guard next == UInt8(ascii: "0") || next == UInt8(ascii: "1") else { return nil }
                position += 1
                return .otherItem
            case UInt8(ascii: "@"):
                position += 1
                return number(integerOnly: true) ? .otherItem : nil
            default:
                return nil
            }
        }

        /// An integer (up to 15 digits) or a decimal (up to 12 integer and 3 fraction digits).
        private mutating func number(integerOnly: Bool = false) -> Bool {
            if next == UInt8(ascii: "-") {
                position += 1
            }
            var integerDigits = 0
            while let byte = next, Self.isDigit(byte) {
                integerDigits += 1
                position += 1
            }
            guard integerDigits > 0 else { return false }
            guard !integerOnly, next == UInt8(ascii: ".") else { return integerDigits <= 15 }
            position += 1
            var fractionDigits = 0
            while let byte = next, Self.isDigit(byte) {
                fractionDigits += 1
                position += 1
            }
            return integerDigits <= 12 && (1...3).contains(fractionDigits)
        }

        private mutating func string() -> Bool {
            position += 1
            while let byte = next {
                position += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return true
                case UInt8(ascii: "\\"):
                    guard next == UInt8(ascii: "\"") || next == UInt8(ascii: "\\") else { return false }
                    position += 1
                case 0x20...0x7E:
                    continue
                default:
                    return false
                }
            }
            return false
        }

        private mutating func skipSpaces() {
            while next == UInt8(ascii: " ") {
                position += 1
            }
        }

        private mutating func skipWhitespace() {
            while next == UInt8(ascii: " ") || next == UInt8(ascii: "\t") {
                position += 1
            }
        }

        private static func isLowercaseAlpha(_ byte: UInt8) -> Bool {
            byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")
        }

        private static func isDigit(_ byte: UInt8) -> Bool {
            byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
        }

        private static func isBase64Character(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"),
                UInt8(ascii: "="):
                return true
            default:
                return false
            }
        }
    }
}
