import Fastpull

/// A usage error that names the option at fault, printed as `error: --flag: what is wrong`; the
/// command exits with ``FastpullError/Code/usage``.
package struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The whole message, starting with `error: `.
    package var message: String

    /// An error with this message (which should start with `error: `).
    package init(message: String) {
        self.message = message
    }

    /// `error: --option: problem, got 'value'`.
    package init(option: String, _ problem: String, got value: String) {
        self.message = "error: --\(option): \(problem), got '\(value)'"
    }

    /// The message.
    package var description: String { message }
}

/// The raw result of parsing: option values by long name (every occurrence, in order; a flag's value
/// is the empty string) and the positional arguments.
package struct ParsedArguments: Sendable, Equatable {
    /// Values by long option name.
    package var values: [String: [String]] = [:]
    /// The arguments that are not options, in order.
    package var positionals: [String] = []

    /// An empty result.
    package init() {}

    /// Whether the option was given.
    package func has(_ long: String) -> Bool { values[long] != nil }
    /// The option's last value (a later occurrence overrides an earlier one).
    package func last(_ long: String) -> String? { values[long]?.last }
    /// Every value of a repeatable option, in order.
    package func all(_ long: String) -> [String] { values[long] ?? [] }
}

/// Parses arguments against ``OptionTable``: `--name value`, `--name=value`, `-n value`, `-nVALUE`,
/// bundled short flags (`-qk`), a lone `-` as a positional, and `--` ending the options.
package enum ArgumentParser {
    /// Parses `arguments` (without the program name).
    ///
    /// - Throws: ``UsageError`` for an unknown option (with a suggestion when one is close), a
    ///   missing value, or a value given to a flag.
    package static func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = 0
        var optionsEnded = false
        func value(for spec: OptionSpec, inline: String?) throws(UsageError) -> String {
            if let inline { return inline }
            index += 1
            guard index < arguments.count else {
                throw UsageError(message: "error: --\(spec.long): expected a value")
            }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                parsed.positionals.append(argument)
            } else if argument == "--" {
                optionsEnded = true
            } else if argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                let name: String
                var inline: String?
                if let equals = body.firstIndex(of: "=") {
                    name = String(body[..<equals])
                    inline = String(body[body.index(after: equals)...])
                } else {
                    name = String(body)
                }
                guard let spec = OptionTable.option(long: name) else {
                    throw UsageError(message: "error: unknown option '--\(name)'\(suggestion(for: name))")
                }
                if spec.takesValue {
                    parsed.values[spec.long, default: []].append(try value(for: spec, inline: inline))
                } else {
                    guard inline == nil else {
                        throw UsageError(message: "error: --\(spec.long): takes no value")
                    }
                    parsed.values[spec.long, default: []].append("")
                }
            } else {
                var letters = Substring(argument.dropFirst())
                while let letter = letters.first {
                    letters = letters.dropFirst()
                    guard let spec = OptionTable.option(short: letter) else {
                        throw UsageError(message: "error: unknown option '-\(letter)' (see fastpull --help)")
                    }
                    if spec.takesValue {
                        let inline = letters.isEmpty ? nil : String(letters)
                        parsed.values[spec.long, default: []].append(try value(for: spec, inline: inline))
                        break
                    }
                    parsed.values[spec.long, default: []].append("")
                }
            }
            index += 1
        }
        return parsed
    }

    /// ` (did you mean '--output'?)` for a near miss, else ` (see fastpull --help)`.
    static func suggestion(for name: String) -> String {
        let scored = OptionTable.all.map { ($0.long, distance(name, $0.long)) }
        if let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= max(1, name.count / 3) {
            return " (did you mean '--\(best.0)'?)"
        }
        return " (see fastpull --help)"
    }

    /// The Levenshtein distance between two short strings.
    private static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(
                    previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
