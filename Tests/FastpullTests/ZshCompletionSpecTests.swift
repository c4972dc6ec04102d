import FastpullCommandLine
import Testing

/// The zsh completion is one `_arguments` call, a spec a line: `'(exclusions)'{-s,--long}'[help]'`,
/// then, for an option that takes a value, `:message:action`. zsh splits a spec at every colon not
/// escaped with a backslash, so a colon or a quote left bare in a message gives it more fields than
/// it has, and zsh refuses the whole call ("invalid rest argument definition") at every Tab.
@Suite("zsh completion specs")
struct ZshCompletionSpecTests {
    /// The spec's words as zsh's shell parser joins them: single-quoted parts lose their quotes, the
    /// brace expansion is kept as one part.
    static func unquoted(_ line: String) -> String? {
        var result = ""
        var inQuote = false
        var index = line.startIndex
        while index < line.endIndex {
            let character = line[index]
            if character == "'" {
                inQuote.toggle()
            } else if !inQuote, character == "\\", line.index(after: index) < line.endIndex {
                index = line.index(after: index)
                result.append(line[index])
            } else {
                result.append(character)
            }
            index = line.index(after: index)
        }
        return inQuote ? nil : result
    }

    /// The fields after the help text, split at colons not escaped.
    static func fieldsAfterHelp(_ spec: String) -> [String]? {
        guard let close = spec.lastIndex(where: { $0 == "]" }) else { return nil }
        var fields: [String] = []
        var current = ""
        var escaped = false
        for character in spec[spec.index(after: close)...] {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ":" {
                fields.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        fields.append(current)
        return fields
    }

    @Test func everyOptionSpecHasItsFieldsAndNoBareQuote() throws {
        let lines = ShellCompletions.script(for: "zsh")?.split(separator: "\n").map(String.init) ?? []
        let specs = lines.filter { $0.hasPrefix("  '") && $0.hasSuffix(" \\") }
        #expect(specs.count >= 20)
        for line in specs {
            let words = String(line.dropLast(2))
            // Quotes balance: no quote inside a message ends its word early.
            let spec = try #require(Self.unquoted(words), "unbalanced quotes: \(line)")
            let fields = try #require(Self.fieldsAfterHelp(spec), "no help text: \(line)")
            // Nothing after the help, or exactly `:message:action`.
            #expect(fields == [""] || fields.count == 3 && fields[0].isEmpty && !fields[1].isEmpty, "\(line)")
        }
        // The two that were broken: a header's and credentials' placeholders hold a colon.
        let header = try #require(specs.first { $0.contains("--header") })
        #expect(header.contains("NAME\\: VALUE") && !header.contains("'NAME"))
        let user = try #require(specs.first { $0.contains("{-u,--user}") })
        #expect(user.contains("USER\\:PASSWORD"))
    }
}
