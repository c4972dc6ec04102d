import Fastpull

/// `fastpull --help`, generated from ``OptionTable`` and ``ExitCodeTable``.
package enum HelpText {
    /// The whole help text, wrapped to ``defaultWidth`` columns.
    package static var text: String { text(width: defaultWidth) }

    /// The whole help text, every line at most `width` columns (at least ``narrowest``: the options'
    /// names take 34 of them).
    package static func text(width: Int) -> String {
        let width = max(width, narrowest)
        var lines = wrap(
            "fastpull \(fastpullVersion) — fast, verified downloads over parallel connections", width: width)
        lines += [
            "",
            "USAGE: fastpull [OPTIONS] URL...",
            "       fastpull [OPTIONS] -i FILE",
            "",
        ]
        lines += wrap(
            "Sizes take K, M, G or KiB, MiB, GiB (all powers of 1024). Progress goes to stderr; --json events go to stdout.",
            width: width)
        for group in OptionSpec.Group.allCases {
            lines.append("")
            lines.append("\(group.rawValue) OPTIONS:")
            for option in OptionTable.all where option.group == group {
                let synopsis = option.synopsis
                // Below 80 columns the help goes under the name, so that it keeps room for its words.
                let column = width >= 80 ? 34 : 6
                let help = wrap(option.help, width: width - column)
                let indent = String(repeating: " ", count: column)
                if column == 34, synopsis.count < 32 {
                    lines.append("  " + synopsis.padded(to: 32) + help[0])
                } else {
                    lines.append("  " + synopsis)
                    lines.append(indent + help[0])
                }
                for more in help.dropFirst() { lines.append(indent + more) }
            }
        }
        lines.append("")
        lines += wrap("EXIT CODES (a batch exits with its first failed file's code):", width: width)
        for (code, meaning) in ExitCodeTable.rows {
            let wrapped = wrap(meaning, width: width - 7)
            lines.append("  " + String(code).padded(to: 5) + wrapped[0])
            for more in wrapped.dropFirst() { lines.append(String(repeating: " ", count: 7) + more) }
        }
        return lines.joined(separator: "\n")
    }

    /// The width `--help` is wrapped to where the terminal's is unknown (a pipe, a file).
    package static let defaultWidth = 80
    /// The narrowest width it wraps to.
    package static let narrowest = 60

    /// `text` in lines of at most `width` characters, broken at spaces.
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var current = ""
        for word in text.split(separator: " ") {
            if !current.isEmpty, current.count + 1 + word.count > width {
                lines.append(current)
                current = ""
            }
            current += current.isEmpty ? String(word) : " " + word
        }
        lines.append(current)
        return lines
    }
}

/// The exit codes of `fastpull`, which are the library's ``FastpullError/Code`` raw values.
package enum ExitCodeTable {
    /// Every code and what it means, in order.
    package static let rows: [(code: Int32, meaning: String)] = [
        (0, "success: every file is in place, size and every known checksum verified"),
        (1, "internal error (a bug; please report it with the command you ran)"),
        (2, "usage: bad option, bad URL, unsupported scheme, bad input file (or one over 8 MiB)"),
        (3, "network: DNS, connect, reset or timeout after the retries"),
        (4, "HTTP: an error status (4xx/5xx) after the retries, or a broken response"),
        (5, "the remote file changed during the download"),
        (6, "integrity: size or checksum mismatch"),
        (7, "local I/O: disk full, permission, missing folder, file exists (see --force)"),
        (8, "TLS: certificate verification or handshake failure"),
        (130, "interrupted (run the same command again to resume)"),
    ]

    /// The stable name of a code in `--json` output: `network`, `httpStatus`, `integrity`, ….
    package static func name(_ code: FastpullError.Code) -> String {
        switch code {
        case .internalError: return "internal"
        case .usage: return "usage"
        case .network: return "network"
        case .httpStatus: return "httpStatus"
        case .remoteChanged: return "remoteChanged"
        case .integrity: return "integrity"
        case .localIO: return "localIO"
        case .tls: return "tls"
        case .interrupted: return "interrupted"
        }
    }
}
