/// What the server makes of a request's `Range` header for a resource of a known size.
enum RangeRequest: Sendable, Equatable {
    /// Serve the whole resource with 200: no header, another unit, bad syntax or several ranges.
    case whole
    /// Serve these bytes with 206.
    case partial(ClosedRange<Int64>)
    /// Answer 416 with `Content-Range: bytes */size`.
    case unsatisfiable

    /// Interprets `header` (`bytes=a-b`, `bytes=a-`, `bytes=-n`) against a resource of `size` bytes.
    init(header: String?, size: Int64) {
        guard let header else {
            self = .whole
            return
        }
        let trimmed = header.trimmingSpaces()
        guard let equals = trimmed.firstIndex(of: "="),
            trimmed[..<equals].trimmingSpaces().lowercased() == "bytes"
        else {
            self = .whole
            return
        }
        let spec = trimmed[trimmed.index(after: equals)...].trimmingSpaces()
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else {
            self = .whole
            return
        }
        let firstText = spec[..<dash].trimmingSpaces()
        let lastText = spec[spec.index(after: dash)...].trimmingSpaces()
        if firstText.isEmpty {
            guard let suffix = Self.number(lastText) else {
                self = .whole
                return
            }
            guard suffix > 0, size > 0 else {
                self = .unsatisfiable
                return
            }
            self = .partial(max(0, size - suffix)...(size - 1))
            return
        }
        guard let first = Self.number(firstText) else {
            self = .whole
            return
        }
        var last = size - 1
        if !lastText.isEmpty {
            guard let parsed = Self.number(lastText), parsed >= first else {
                self = .whole
                return
            }
            last = min(parsed, size - 1)
        }
        guard first < size else {
            self = .unsatisfiable
            return
        }
        self = .partial(first...last)
    }

    /// A non-negative decimal number (digits only), nil on overflow or any other character.
    private static func number(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        return Int64(text)
    }
}
