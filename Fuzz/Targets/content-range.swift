// libFuzzer target: ContentRange.parse.
//
// Input: a Content-Range field value. The parser's answer is compared with a straightforward reference
// implementation of the same strict grammar (`bytes a-b/N`, `bytes a-b/*`, `bytes */N`, `a <= b < N`,
// case-insensitive unit, decimal digits within Int64), and a parsed range must print and parse back
// to itself.

/// libFuzzer's entry point: runs one input; a violated invariant stops the process.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzContentRange(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: fuzzInput(data, size), as: UTF8.self)
    let parsed = ContentRange.parse(text)
    let expected = referenceParse(text)
    require(
        parsed == expected,
        "\(text.debugDescription): parsed \(String(describing: parsed)), expected \(String(describing: expected))"
    )
    guard let parsed else { return 0 }
    if let first = parsed.first, let last = parsed.last {
        require(first >= 0 && first <= last, "range \(first)-\(last)")
        require(parsed.count.map { $0 >= 1 } == true, "count \(String(describing: parsed.count))")
        if let length = parsed.completeLength { require(last < length, "last \(last) >= \(length)") }
    } else {
        require(parsed.first == nil && parsed.last == nil && parsed.completeLength != nil, "half a range")
        require(parsed.count == nil, "count without a range")
    }
    let range = parsed.first.map { "\($0)-\(parsed.last!)" } ?? "*"
    let printed = "bytes \(range)/\(parsed.completeLength.map(String.init) ?? "*")"
    require(ContentRange.parse(printed) == parsed, "\(printed) does not parse back")
    return 0
}

/// The grammar, written plainly.
private func referenceParse(_ text: String) -> ContentRange? {
    let bytes = Array(text.utf8)
    let unit = bytes.prefix(6).map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 + 32 : $0 }
    guard bytes.count > 6, unit == Array("bytes ".utf8) else { return nil }
    let rest = bytes[6...]
    let parts = rest.split(separator: UInt8(ascii: "/"), maxSplits: 1, omittingEmptySubsequences: false)
    guard parts.count == 2 else { return nil }
    let length: Int64?
    if parts[1].elementsEqual([UInt8(ascii: "*")]) {
        length = nil
    } else {
        guard let value = number(parts[1]) else { return nil }
        length = value
    }
    if parts[0].elementsEqual([UInt8(ascii: "*")]) {
        guard let length else { return nil }
        return ContentRange(first: nil, last: nil, completeLength: length)
    }
    let ends = parts[0].split(separator: UInt8(ascii: "-"), maxSplits: 1, omittingEmptySubsequences: false)
    guard ends.count == 2, let first = number(ends[0]), let last = number(ends[1]), first <= last else {
        return nil
    }
    if let length, last >= length { return nil }
    return ContentRange(first: first, last: last, completeLength: length)
}

/// One or more ASCII digits that fit Int64.
private func number(_ digits: ArraySlice<UInt8>) -> Int64? {
    guard !digits.isEmpty, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
        return nil
    }
    return Int64(String(decoding: digits, as: UTF8.self))
}
