/// curl's URL globbing: `[00001-00005]` (numbers, zero-padded as the first is written), `[a-z]`
/// (letters), `[0-100:10]` (a step), and `{one,two}` (alternatives) in a URL given as an argument
/// expand it into a batch, first pattern slowest, as curl orders them. `-g`/`--globoff` turns it
/// off. A bracket that holds no range (an IPv6 address, `http://[::1]:8080/`) and braces without a
/// comma stay as they are.
package enum URLGlob {
    /// The most URLs one argument may expand into.
    package static let limit = 100_000

    /// One piece of a pattern: text as it is, or one of several texts.
    enum Piece: Equatable {
        case text(String)
        case choice([String])
    }

    /// The URLs `text` stands for, in curl's order.
    ///
    /// - Throws: ``UsageError`` for a range that runs backwards, a bracket or brace not closed, or
    ///   more than ``limit`` URLs.
    package static func expand(_ text: String) throws(UsageError) -> [String] {
        var results = [""]
        for piece in try pieces(of: text) {
            switch piece {
            case .text(let literal):
                results = results.map { $0 + literal }
            case .choice(let options):
                guard results.count * options.count <= limit else {
                    throw UsageError(
                        message:
                            "error: '\(text)' stands for more than \(limit) URLs (use -g to turn globbing off)"
                    )
                }
                results = results.flatMap { prefix in options.map { prefix + $0 } }
            }
        }
        return results
    }

    /// `text` split into literal text and choices.
    static func pieces(of text: String) throws(UsageError) -> [Piece] {
        var pieces: [Piece] = []
        var literal = ""
        var rest = Substring(text)
        func fail(_ problem: String) -> UsageError {
            UsageError(message: "error: '\(text)': \(problem) (use -g to turn globbing off)")
        }
        while let character = rest.first {
            switch character {
            case "[":
                guard let close = rest.firstIndex(of: "]") else { throw fail("a [ is not closed") }
                let inside = rest[rest.index(after: rest.startIndex)..<close]
                if let options = try range(inside, fail: fail) {
                    if !literal.isEmpty { pieces.append(.text(literal)) }
                    literal = ""
                    pieces.append(.choice(options))
                } else {
                    literal += rest[...close]
                }
                rest = rest[rest.index(after: close)...]
            case "{":
                guard let close = rest.firstIndex(of: "}") else { throw fail("a { is not closed") }
                let inside = rest[rest.index(after: rest.startIndex)..<close]
                if inside.contains(",") {
                    if !literal.isEmpty { pieces.append(.text(literal)) }
                    literal = ""
                    pieces.append(
                        .choice(
                            inside.split(separator: ",", omittingEmptySubsequences: false).map(String.init)))
                } else {
                    literal += rest[...close]
                }
                rest = rest[rest.index(after: close)...]
            default:
                literal.append(character)
                rest = rest.dropFirst()
            }
        }
        if !literal.isEmpty { pieces.append(.text(literal)) }
        return pieces
    }

    /// The texts of `[first-last]` or `[first-last:step]`, or nil when `inside` is no range.
    private static func range(_ inside: Substring, fail: (String) -> UsageError) throws(UsageError)
        -> [String]?
    {
        let parts = inside.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let bounds = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, !bounds[0].isEmpty, !bounds[1].isEmpty else { return nil }
        var step = 1
        if parts.count == 2 {
            guard let value = Int(parts[1]), value > 0 else { return nil }
            step = value
        }
        let first = bounds[0]
        let last = bounds[1]
        if first.allSatisfy(\.isASCIIDigit), last.allSatisfy(\.isASCIIDigit) {
            guard let low = Int(first), let high = Int(last), first.count <= 18, last.count <= 18 else {
                return nil
            }
            guard low <= high else { throw fail("the range [\(inside)] runs backwards") }
            guard (high - low) / step < limit else { throw fail("the range [\(inside)] is too long") }
            // Zero-padded as its first number is written: [00001-00005] gives 00001, 00002, …
            let width = first.count
            return stride(from: low, through: high, by: step).map { number in
                let digits = String(number)
                return String(repeating: "0", count: max(0, width - digits.count)) + digits
            }
        }
        guard first.count == 1, last.count == 1, let low = first.first?.asciiValue,
            let high = last.first?.asciiValue, first.first?.isLetter == true, last.first?.isLetter == true,
            first.first?.isUppercase == last.first?.isUppercase
        else { return nil }
        guard low <= high else { throw fail("the range [\(inside)] runs backwards") }
        return stride(from: low, through: high, by: step).map { String(UnicodeScalar($0)) }
    }
}

extension Character {
    /// `0`…`9`.
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
