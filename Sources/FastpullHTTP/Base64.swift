/// Strict base64 (RFC 4648) for digest values in HTTP fields, checksum options and checksum files.
package enum Base64 {
    /// The bytes encoded by `text`, or nil when it is not base64.
    ///
    /// Accepts the standard alphabet (`+` `/`), and with `allowURLSafe` also the URL-safe one (`-` `_`).
    /// Padding is optional, but when present it must be exactly what the length requires. Rejects
    /// whitespace, characters outside the alphabet and a length that leaves a single trailing character.
    /// Non-zero bits in the last character's unused low bits are ignored, as RFC 8941 §4.2.7 asks of
    /// structured-field parsers. The empty string decodes to no bytes.
    package static func decode(_ text: some StringProtocol, allowURLSafe: Bool = false) -> [UInt8]? {
        var characters = Array(text.utf8)
        var padding = 0
        while characters.last == UInt8(ascii: "=") {
            characters.removeLast()
            padding += 1
        }
        let remainder = characters.count % 4
        guard remainder != 1 else { return nil }
        if padding > 0 {
            guard padding <= 2, (characters.count + padding) % 4 == 0, remainder != 0 else { return nil }
        }
        var result = [UInt8]()
        result.reserveCapacity(characters.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in characters {
            guard let value = sextet(character, allowURLSafe: allowURLSafe) else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                result.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        return result
    }

    /// `bytes` in the standard alphabet with padding.
    package static func encode(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var text = [UInt8]()
        text.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let count = min(3, bytes.count - index)
            var group: UInt32 = 0
            for offset in 0..<3 {
                group = group << 8 | (offset < count ? UInt32(bytes[index + offset]) : 0)
            }
            for position in 0..<4 {
                if position <= count {
                    text.append(alphabet[Int((group >> UInt32(18 - 6 * position)) & 0x3F)])
                } else {
                    text.append(UInt8(ascii: "="))
                }
            }
            index += 3
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func sextet(_ character: UInt8, allowURLSafe: Bool) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        case UInt8(ascii: "-") where allowURLSafe: return 62
        case UInt8(ascii: "_") where allowURLSafe: return 63
        default: return nil
        }
    }
}
