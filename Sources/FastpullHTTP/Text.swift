/// The few text operations Fastpull needs beyond the standard library, so that the library and the
/// command need only FoundationEssentials (whose start costs a process far less than Foundation's).
extension StringProtocol {
    /// The text without white space (Unicode's, line breaks excepted) at either end.
    package func trimmingSpaces() -> String {
        trimming { $0.properties.isWhitespace && !Self.isLineBreak($0) }
    }

    /// The text without white space or line breaks at either end.
    package func trimmingSpacesAndLines() -> String {
        trimming { $0.properties.isWhitespace }
    }

    /// The text cut or filled with spaces to `width` characters.
    package func padded(to width: Int) -> String {
        count >= width ? String(prefix(width)) : String(self) + String(repeating: " ", count: width - count)
    }

    /// The text with its `%XX` escapes decoded; nil when an escape is malformed or the result is not
    /// UTF-8.
    package var percentDecoded: String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var iterator = utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(HexDigit.value),
                let low = iterator.next().flatMap(HexDigit.value)
            else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private func trimming(_ isTrimmed: (Unicode.Scalar) -> Bool) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !isTrimmed($0) }),
            let last = scalars.lastIndex(where: { !isTrimmed($0) })
        else { return "" }
        var text = String.UnicodeScalarView()
        text.append(contentsOf: scalars[first...last])
        return String(text)
    }

    private static func isLineBreak(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0A...0x0D, 0x85, 0x2028, 0x2029: return true
        default: return false
        }
    }
}

extension Unicode.Scalar {
    /// Whether the scalar is a control character (C0, DEL, C1) or one that changes how the text
    /// around it is shown rather than showing itself: the bidirectional embeddings, overrides,
    /// isolates and marks, and the line and paragraph separators. Never part of a file name
    /// (``OutputName/sanitize(_:)``), and shown escaped on a terminal (``StringProtocol/escapedForTerminal``).
    package var isControlOrLayout: Bool {
        switch value {
        case 0x00...0x1F, 0x7F...0x9F: return true
        case 0x061C, 0x200E, 0x200F, 0x2028...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}

extension StringProtocol {
    /// The text as a terminal may show it: every ``Unicode/Scalar/isControlOrLayout`` scalar written
    /// out as an escape (`\n`, `\r`, `\t`, `\x1B`, `\u{202E}`), so that a name or message from a
    /// server or a document can neither move the cursor, change colours nor reorder what is shown.
    package var escapedForTerminal: String {
        // Most text is printable ASCII (or other UTF-8 that starts no escape): kept as it is, at once.
        if utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return String(self) }
        var result = ""
        for scalar in unicodeScalars {
            guard scalar.isControlOrLayout else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                result += scalar.value < 0x100 ? "\\x" + (hex.count < 2 ? "0" + hex : hex) : "\\u{\(hex)}"
            }
        }
        return result
    }
}

/// Hexadecimal digits, for percent-decoding here and digests in the engine.
package enum HexDigit {
    /// The value of one hexadecimal digit (either case); nil for any other byte.
    package static func value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
