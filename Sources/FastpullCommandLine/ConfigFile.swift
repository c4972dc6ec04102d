/// The configuration file: options a user wants in every run, as `.curlrc`, `.wgetrc` and
/// `aria2.conf` hold them. One option a line, by its long name with or without `--`, its value after
/// `=` or a space (`dir = ~/Downloads`, `--retries 8`, `max-connections=32`, `quiet`), a value with
/// spaces in quotes; `#` starts a comment line. Other tools' spellings are read as on the command
/// line (`retry = 5`).
///
/// It is `$XDG_CONFIG_HOME/fastpull/config`, else `~/.config/fastpull/config`, when it exists; `-K
/// FILE`/`--config FILE` (curl's) reads FILE instead, and `--no-config` none. Its options come before
/// the command line's: a value given there wins, a repeatable option adds to the file's.
package enum ConfigFile {
    /// The default file's path, from `environment`; nil without `HOME` and `XDG_CONFIG_HOME`.
    package static func defaultPath(environment: [String: String]) -> String? {
        if let base = environment["XDG_CONFIG_HOME"], base.hasPrefix("/") {
            return base + "/fastpull/config"
        }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return home + "/.config/fastpull/config"
    }

    /// `arguments` (already in fastpull's spellings) with the configuration file's options first.
    ///
    /// - Parameters:
    ///   - read: the contents of a file, nil when it cannot be read.
    /// - Throws: ``UsageError`` when `--config`'s file cannot be read, or a line of the file is not
    ///   an option (naming the file and line).
    package static func merged(
        _ arguments: [String], environment: [String: String], read: (String) -> String?
    ) throws(UsageError) -> [String] {
        var explicit: String?
        var disabled = false
        var index = 0
        while index < arguments.count, arguments[index] != "--" {
            let argument = arguments[index]
            if argument == "--no-config" {
                disabled = true
            } else if argument == "--config" {
                guard index + 1 < arguments.count else {
                    throw UsageError(message: "error: --config: expected a value")
                }
                explicit = arguments[index + 1]
                index += 1
            } else if argument.hasPrefix("--config=") {
                explicit = String(argument.dropFirst("--config=".count))
            } else if argument.hasPrefix("--") {
                // Another long option's value is no option (`--min-segment 64K`, `-o -K`).
                if !argument.contains("="),
                    OptionTable.option(long: String(argument.dropFirst(2)))?.takesValue == true
                {
                    index += 1
                }
            } else if argument.hasPrefix("-"), argument.count > 1, takesNextAsValue(argument) {
                // A cluster whose last letter takes a value (`-o FILE`, `-qo FILE`): FILE is none.
                index += 1
            } else if argument.hasPrefix("-"), argument.count > 1, let value = clusterConfig(argument) {
                // `-K FILE`, `-KFILE`, or the end of a cluster of flags (`-qK FILE`).
                if value.isEmpty {
                    guard index + 1 < arguments.count else {
                        throw UsageError(message: "error: --config: expected a value")
                    }
                    explicit = arguments[index + 1]
                    index += 1
                } else {
                    explicit = value
                }
            }
            index += 1
        }
        if disabled { return arguments }
        if let explicit {
            guard let text = read(explicit) else {
                throw UsageError(message: "error: --config: cannot read '\(explicit)'")
            }
            return try self.arguments(from: text, source: explicit) + arguments
        }
        guard let path = defaultPath(environment: environment), let text = read(path) else {
            return arguments
        }
        return try self.arguments(from: text, source: path) + arguments
    }

    /// Whether a cluster of short options ends with one that takes its value from the next argument
    /// (`-o`, `-qo`; not `-ofile`, whose value is in it, nor `-K`, read above).
    static func takesNextAsValue(_ argument: String) -> Bool {
        var letters = Substring(argument.dropFirst())
        while let letter = letters.first {
            letters = letters.dropFirst()
            guard letter != "K", let spec = OptionTable.option(short: letter) else { return false }
            if spec.takesValue { return letters.isEmpty }
        }
        return false
    }

    /// What follows `K` in a cluster of short options (`-K`, `-KFILE`, `-qK`), when the letters before
    /// it are flags (a letter that takes a value takes the rest as its value); nil without `K`.
    static func clusterConfig(_ argument: String) -> String? {
        var letters = Substring(argument.dropFirst())
        while let letter = letters.first {
            letters = letters.dropFirst()
            if letter == "K" { return String(letters) }
            guard let spec = OptionTable.option(short: letter), !spec.takesValue else { return nil }
        }
        return nil
    }

    /// The command-line arguments `text` stands for.
    ///
    /// - Throws: ``UsageError`` naming `source` and the line, for a line that is not an option (or
    ///   names one the file cannot hold, such as `--config` itself), or a bad quote.
    package static func arguments(from text: String, source: String) throws(UsageError) -> [String] {
        var result: [String] = []
        let lines = text.split(
            omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        for (offset, raw) in lines.enumerated() {
            func failure(_ problem: String) -> UsageError {
                UsageError(message: "error: \(source):\(offset + 1): \(problem)")
            }
            let line = raw.trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") { continue }
            var name = Substring(line)
            var value: String?
            if let separator = line.firstIndex(where: { $0 == "=" || $0 == " " || $0 == "\t" }) {
                name = line[..<separator]
                var rest = Substring(line[line.index(after: separator)...].trimmingSpaces())
                if line[separator] != "=", rest.hasPrefix("=") {
                    rest = Substring(rest.dropFirst().trimmingSpaces())
                }
                if rest.count >= 2, rest.hasPrefix("\""), rest.hasSuffix("\"") {
                    rest = rest.dropFirst().dropLast()
                } else if rest.hasPrefix("\"") {
                    throw failure("a quote is not closed")
                }
                value = String(rest)
            }
            let long = name.hasPrefix("--") ? String(name.dropFirst(2)) : String(name)
            guard !long.hasPrefix("-"), !long.isEmpty else {
                throw failure("expected an option by its long name, got '\(line)'")
            }
            guard !["config", "no-config", "help", "version", "man", "completions"].contains(long) else {
                throw failure("--\(long) cannot be in a configuration file")
            }
            var tokens = ["--" + long]
            if let value, !value.isEmpty {
                // wget's `quiet = on`: a flag's switch.
                if OptionTable.option(long: long)?.takesValue == false {
                    switch value.lowercased() {
                    case "on", "true", "yes", "1": break
                    case "off", "false", "no", "0": continue
                    default: throw failure("--\(long) is on or off, got '\(value)'")
                    }
                } else {
                    tokens.append(value)
                }
            }
            let spelled: [String]
            do throws(UsageError) {
                spelled = try OptionAliases.rewrite(tokens)
                let parsed = try ArgumentParser.parse(spelled)
                guard parsed.positionals.isEmpty else {
                    throw UsageError(message: "error: --\(long): takes no value")
                }
            } catch {
                throw failure(String(error.message.dropFirst("error: ".count)))
            }
            result += spelled
        }
        return result
    }
}
