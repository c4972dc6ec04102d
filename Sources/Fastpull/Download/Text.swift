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
            guard let high = iterator.next().flatMap(Digest.hexDigit),
                let low = iterator.next().flatMap(Digest.hexDigit)
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
