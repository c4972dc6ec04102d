import Fastpull

/// Credentials from a `.netrc` file, as curl and wget read it: `machine HOST login USER password
/// SECRET` entries, a `default` entry for every other host, `macdef` macros skipped. Tokens are
/// separated by any whitespace, lines do not matter, and a token may be quoted (`"a b"`, with `\"`).
package struct Netrc: Sendable, Equatable {
    /// One entry.
    package struct Entry: Sendable, Equatable {
        /// The host, or nil for `default`.
        package var machine: String?
        /// The user name.
        package var login: String?
        /// The password.
        package var password: String?
    }

    /// The entries, in file order.
    package var entries: [Entry]

    /// Parses the text of a `.netrc` file. Unknown keywords (`account`, `port`) are skipped with their
    /// value.
    package init(parsing text: String) {
        var tokens = Self.tokens(of: text)[...]
        var entries: [Entry] = []
        var current: Entry?
        while let token = tokens.popFirst() {
            switch token {
            case "machine":
                if let current { entries.append(current) }
                current = Entry(machine: tokens.popFirst()?.lowercased())
            case "default":
                if let current { entries.append(current) }
                current = Entry(machine: nil)
            case "login":
                current?.login = tokens.popFirst()
            case "password":
                current?.password = tokens.popFirst()
            case "account", "port":
                _ = tokens.popFirst()
            case "macdef":
                // The macro runs to the next blank line, which the tokenizer marks.
                _ = tokens.popFirst()
                while let next = tokens.popFirst(), next != Self.blankLine {}
            default:
                break
            }
        }
        if let current { entries.append(current) }
        self.entries = entries
    }

    /// The credentials for `host`: its `machine` entry, else the `default` one; nil without a login
    /// and password.
    package func credentials(for host: String) -> Credentials? {
        let host = host.lowercased()
        let entry = entries.first { $0.machine == host } ?? entries.first { $0.machine == nil }
        guard let entry, let login = entry.login, let password = entry.password else { return nil }
        return Credentials(user: login, password: password)
    }

    /// Marks a blank line among the tokens (it ends a `macdef`).
    private static let blankLine = "\u{0}blank"

    private static func tokens(of text: String) -> [String] {
        var tokens: [String] = []
        for line in BatchFile.lines(of: text) {
            let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
            var trimmed = line.drop(while: isSpace)
            while let last = trimmed.last, isSpace(last) { trimmed = trimmed.dropLast() }
            if trimmed.isEmpty {
                tokens.append(blankLine)
                continue
            }
            if trimmed.hasPrefix("#") { continue }
            var current = ""
            var inToken = false
            var quoted = false
            var iterator = trimmed.makeIterator()
            while let character = iterator.next() {
                if quoted {
                    if character == "\\", let next = iterator.next() {
                        current.append(next)
                    } else if character == "\"" {
                        quoted = false
                    } else {
                        current.append(character)
                    }
                } else if character == " " || character == "\t" || character == "\r" {
                    if inToken { tokens.append(current) }
                    current = ""
                    inToken = false
                } else if character == "\"" {
                    quoted = true
                    inToken = true
                } else {
                    current.append(character)
                    inToken = true
                }
            }
            if inToken { tokens.append(current) }
        }
        return tokens
    }
}
