/// `fastpull --help`, generated from ``OptionTable`` and ``ExitCodeTable``.
package enum HelpText {
    /// The whole help text.
    package static var text: String {
        var lines = [
            "fastpull \(fastpullVersion) — fast, verified downloads over parallel connections",
            "",
            "USAGE: fastpull [OPTIONS] URL...",
            "       fastpull [OPTIONS] -i FILE",
            "",
            "Sizes take K, M, G or KiB, MiB, GiB (all powers of 1024). Progress goes to stderr; --json",
            "events go to stdout.",
        ]
        for group in OptionSpec.Group.allCases {
            lines.append("")
            lines.append("\(group.rawValue) OPTIONS:")
            for option in OptionTable.all where option.group == group {
                let synopsis = option.synopsis
                let help = wrap(option.help, width: width - 34)
                if synopsis.count < 32 {
                    lines.append("  " + synopsis.padding(toLength: 32, withPad: " ", startingAt: 0) + help[0])
                } else {
                    lines.append("  " + synopsis)
                    lines.append(String(repeating: " ", count: 34) + help[0])
                }
                for more in help.dropFirst() { lines.append(String(repeating: " ", count: 34) + more) }
            }
        }
        lines.append("")
        lines.append("EXIT CODES (a batch exits with its first failed file's code):")
        for (code, meaning) in ExitCodeTable.rows {
            lines.append("  " + String(code).padding(toLength: 5, withPad: " ", startingAt: 0) + meaning)
        }
        return lines.joined(separator: "\n")
    }

    /// The width `--help` is wrapped to.
    package static let width = 100

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
        (2, "usage: bad option, bad URL, unsupported scheme, bad input file"),
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
