import FastpullNet

/// A parsed `Content-Range` field value (RFC 9110 §14.4) in byte units.
///
/// `bytes a-b/N` gives first `a`, last `b` (inclusive) and complete length `N`; `bytes a-b/*` leaves the
/// complete length unknown (nil); `bytes */N` (in a 416 response) has no range, only the length.
package struct ContentRange: Sendable, Equatable {
    package var first: Int64?
    package var last: Int64?
    package var completeLength: Int64?

    /// The number of bytes in the range, or nil for `bytes */N`.
    package var count: Int64? {
        guard let first, let last else { return nil }
        return last - first + 1
    }

    /// Parses strictly: `bytes a-b/N`, `bytes a-b/*` or `bytes */N` with `a <= b < N`, decimal digits
    /// only, exactly one space after the case-insensitive unit `bytes`, no other whitespace, every number
    /// within Int64. Returns nil for anything else.
    package static func parse(_ value: String) -> ContentRange? {
        var value = value
        return value.withUTF8 { parse(bytes: $0) }
    }

    private static func parse(bytes: UnsafeBufferPointer<UInt8>) -> ContentRange? {
        let unit = "bytes ".utf8
        guard bytes.count > unit.count,
            zip(bytes, unit).allSatisfy({ HTTPHeaders.asciiLowercase($0) == $1 })
        else { return nil }
        let rest = bytes[unit.count...]
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        let rangePart = rest[..<slash]
        let lengthPart = rest[(slash + 1)...]

        let completeLength: Int64?
        if lengthPart.elementsEqual("*".utf8) {
            completeLength = nil
        } else {
            guard let length = ResponseHead.parseDecimal(lengthPart) else { return nil }
            completeLength = length
        }

        if rangePart.elementsEqual("*".utf8) {
            guard let completeLength else { return nil }  // "bytes */*" is meaningless
            return ContentRange(first: nil, last: nil, completeLength: completeLength)
        }
        guard let dash = rangePart.firstIndex(of: UInt8(ascii: "-")),
            let first = ResponseHead.parseDecimal(rangePart[..<dash]),
            let last = ResponseHead.parseDecimal(rangePart[(dash + 1)...]),
            first <= last
        else { return nil }
        if let completeLength, last >= completeLength {
            return nil
        }
        return ContentRange(first: first, last: last, completeLength: completeLength)
    }
}
