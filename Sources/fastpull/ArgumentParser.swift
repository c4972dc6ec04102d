/// A usage error that names the option at fault, printed as `error: --flag: what is wrong`.
struct UsageError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// The raw result of parsing: option values by long name (repeatable ones keep every value) and the
/// positional arguments.
struct ParsedArguments {
    var values: [String: [String]] = [:]
    var positionals: [String] = []

    func has(_ long: String) -> Bool { values[long] != nil }
    func last(_ long: String) -> String? { values[long]?.last }
    func all(_ long: String) -> [String] { values[long] ?? [] }
}

/// Parses arguments against ``OptionTable``: `--name value`, `--name=value`, `-n value`, `-nVALUE`,
/// bundled short flags (`-qk`), and `--` ending the options.
enum ArgumentParser {
    static func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
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
                    throw UsageError(message: "error: unknown option '--\(name)' (see fastpull --help)")
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
}
