/// The options of `fastpull daemon` — aria2c's daemon flags, so that a program that starts
/// `aria2c --enable-rpc …` (or finds `aria2c` on `PATH` as a link to fastpull) gets the manager:
/// `--enable-rpc`, `--rpc-listen-port`, `--rpc-secret`, `--rpc-listen-all`, `--rpc-allow-origin-all`,
/// `--dir`/`-d`, `--max-concurrent-downloads`/`-j`, `--quiet`/`-q`, `--input-file`/`-i`,
/// `--save-session`, `--save-session-interval`, `--conf-path`/`--no-conf`, `--max-download-limit`,
/// `--max-overall-download-limit`,
/// and fastpull's own `--list PATH` (the SQLite file of the list), `--rpc-secret-file PATH` and
/// `--allow-any-dir`. aria2's other options are accepted and left alone, as its front-ends pass many;
/// anything aria2 does not know either is an error that names it.
package struct DaemonOptions: Equatable, Sendable {
    /// The list's SQLite file (default: `$XDG_DATA_HOME/fastpull/downloads.sqlite`).
    package var listPath: String?
    /// Where downloads go when a call names no `dir` (default: the working directory).
    package var directory: String?
    /// The RPC port (0: a free one, said in the first line printed).
    package var port = 6800
    package var secret: String?
    package var listensOnAllInterfaces = false
    package var allowsAnyOrigin = false
    package var maximumActive = 5
    package var quiet = false
    /// A file holding the secret (fastpull's own; never the secret itself on the command line).
    package var secretFile: String?
    /// Whether a call's `dir` may leave the download folder (aria2's behaviour; off by default).
    package var allowsAnyFolder = false
    /// aria2's session file: read at the start, written at the end and every ``sessionInterval``.
    package var sessionPath: String?
    /// Seconds between session saves (0: only at the end).
    package var sessionInterval = 0
    /// An aria2 input file whose downloads are added at the start (those already in the list are not
    /// added twice).
    package var inputPath: String?
    /// aria2's configuration file (`--conf-path`), and whether none is read (`--no-conf`).
    package var configurationPath: String?
    package var readsNoConfiguration = false
    /// The speed limit of each download, when no call sets one (aria2's `--max-download-limit`).
    package var downloadLimit: String?
    /// The speed limit of all downloads together (aria2's `--max-overall-download-limit`).
    package var overallLimit: String?
    /// aria2 options given that the manager does not use.
    package var ignored: [String] = []

    /// The arguments a daemon run parses, or nil when the command line asks for no daemon: the
    /// `daemon` subcommand, a program started under the name `aria2c`, or `--enable-rpc`.
    package static func invocation(executable: String, arguments: [String]) -> [String]? {
        if arguments.first == "daemon" { return Array(arguments.dropFirst()) }
        let name = executable.split(separator: "/").last.map(String.init) ?? executable
        if name == "aria2c" { return arguments }
        if arguments.contains(where: { $0 == "--enable-rpc" || $0 == "--enable-rpc=true" }) {
            return arguments
        }
        return nil
    }

    /// aria2 options the manager accepts and does not use (each may take a value).
    static let acceptedFromAria2: Set<String> = [
        "daemon", "D", "continue", "c", "split", "s",
        "max-connection-per-server", "x", "min-split-size", "k", "check-certificate", "log", "l",
        "console-log-level", "log-level", "rpc-max-request-size", "disable-ipv6", "file-allocation",
        "auto-file-renaming", "allow-overwrite", "user-agent", "U", "summary-interval",
        "show-console-readout",
        "no-conf", "rpc-save-upload-metadata", "follow-torrent", "follow-metalink", "seed-time",
        "bt-max-peers",
        "enable-dht", "always-resume", "max-tries", "retry-wait", "timeout", "connect-timeout",
    ]

    /// Options that take no value (a following word is not theirs).
    static let flags: Set<String> = [
        "enable-rpc", "rpc-listen-all", "rpc-allow-origin-all", "quiet", "q", "daemon", "D", "continue", "c",
        "no-conf", "disable-ipv6", "show-console-readout", "allow-any-dir",
    ]

    /// Parses `arguments` (`--name=value`, `--name value`, `-n value`, and flags with an optional
    /// `=true`/`=false`).
    package init(parsing arguments: [String]) throws(UsageError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("-"), argument != "-" else {
                throw UsageError(
                    message:
                        "error: fastpull daemon takes no URL ('\(argument)'): add downloads through its RPC")
            }
            let body = argument.drop { $0 == "-" }
            let name = String(body.prefix { $0 != "=" })
            var value: String? = body.contains("=") ? String(body.drop { $0 != "=" }.dropFirst()) : nil
            // A following word is a value unless it is an option itself (aria2 has options whose value
            // is optional: `--check-certificate --rpc-secret=S` must not drop the secret).
            if value == nil, !Self.flags.contains(name), !Self.booleans.contains(name),
                index < arguments.count, !arguments[index].hasPrefix("-") || arguments[index] == "-"
            {
                value = arguments[index]
                index += 1
            }
            func required() throws(UsageError) -> String {
                guard let value, !value.isEmpty else {
                    throw UsageError(message: "error: \(argument) needs a value")
                }
                return value
            }
            func number(_ range: ClosedRange<Int>) throws(UsageError) -> Int {
                let text = try required()
                guard let number = Int(text), range.contains(number) else {
                    throw UsageError(
                        message:
                            "error: \(argument.prefix { $0 != "=" }) expects a number in \(range.lowerBound)-\(range.upperBound), got '\(text)'"
                    )
                }
                return number
            }
            func boolean() throws(UsageError) -> Bool {
                switch value {
                case nil, "true": return true
                case "false": return false
                default:
                    throw UsageError(message: "error: \(name) expects true or false, got '\(value ?? "")'")
                }
            }
            switch name {
            case "enable-rpc": _ = try boolean()  // what starts the daemon: always on here
            case "list": listPath = try required()
            case "dir", "d": directory = try required()
            case "rpc-listen-port": port = try number(0...65535)
            case "rpc-secret": secret = try required()
            case "rpc-listen-all": listensOnAllInterfaces = try boolean()
            case "rpc-allow-origin-all": allowsAnyOrigin = try boolean()
            case "max-concurrent-downloads", "j": maximumActive = try number(1...1000)
            case "quiet", "q": quiet = try boolean()
            case "rpc-secret-file": secretFile = try required()
            case "allow-any-dir": allowsAnyFolder = try boolean()
            case "save-session": sessionPath = try required()
            case "save-session-interval": sessionInterval = try number(0...86_400)
            case "input-file", "i": inputPath = try required()
            case "conf-path": configurationPath = try required()
            case "no-conf": readsNoConfiguration = try boolean()
            case "max-download-limit": downloadLimit = try required()
            case "max-overall-download-limit": overallLimit = try required()
            case _ where Self.acceptedFromAria2.contains(name): ignored.append(name)
            default:
                throw UsageError(
                    message:
                        "error: unknown option '\(argument.prefix { $0 != "=" })' for fastpull daemon (see fastpull daemon --help)"
                )
            }
        }
    }

    /// Booleans that may be followed by a word that is not theirs.
    static let booleans: Set<String> = [
        "enable-rpc", "rpc-listen-all", "rpc-allow-origin-all", "quiet", "q", "allow-any-dir", "no-conf",
    ]

    /// The options of an aria2 configuration file (`name=value` lines, `#` comments) as arguments,
    /// to go before the command line's (whose options then win).
    package static func configurationArguments(_ text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).compactMap { raw in
            let line = raw.drop { $0 == " " || $0 == "\t" }
            guard !line.isEmpty, !line.hasPrefix("#"), line.contains("=") else { return nil }
            return "--" + line
        }
    }

    /// Where the list lives when `--list` is not given. `fastpull daemon` keeps one list per user
    /// (``defaultListPath(environment:)``); started as `aria2c`, the list is scoped as aria2 scopes
    /// its state: beside the `--save-session` file when there is one, else in the download folder, so
    /// two daemons with two folders never see each other's items.
    package func listPath(asAria2c: Bool, workingFolder: String, environment: [String: String]) -> String {
        if let listPath { return listPath }
        guard asAria2c else { return Self.defaultListPath(environment: environment) }
        if let sessionPath { return sessionPath + ".fastpull.sqlite" }
        return (directory ?? workingFolder) + "/.fastpull-downloads.sqlite"
    }

    /// Where the RPC secret is in `arguments` (without the program name): `--rpc-secret VALUE` or
    /// `--rpc-secret=VALUE`, hidden from the process table like fastpull's passwords.
    package static func secretSpans(in arguments: [String]) -> [ArgumentSecrets.Span] {
        var spans: [ArgumentSecrets.Span] = []
        for (index, argument) in arguments.enumerated() {
            if argument == "--rpc-secret", index + 1 < arguments.count {
                spans.append(.init(argument: index + 1, bytes: 0..<arguments[index + 1].utf8.count))
            } else if argument.hasPrefix("--rpc-secret=") {
                let start = "--rpc-secret=".utf8.count
                spans.append(.init(argument: index, bytes: start..<argument.utf8.count))
            }
        }
        return spans
    }

    /// The list's file when none is given: `$XDG_DATA_HOME/fastpull/downloads.sqlite`, else
    /// `$HOME/.local/share/fastpull/downloads.sqlite`.
    package static func defaultListPath(environment: [String: String]) -> String {
        let data =
            environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((environment["HOME"] ?? ".") + "/.local/share")
        return data + "/fastpull/downloads.sqlite"
    }
}
