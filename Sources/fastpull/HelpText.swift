import Fastpull

/// `fastpull --help`, generated from ``OptionTable`` and the exit-code table.
enum HelpText {
    static let exitCodes: [(Int32, String)] = [
        (0, "success: the file is in place, size and every known checksum verified"),
        (1, "internal error (a bug; please report it with the command you ran)"),
        (2, "usage: bad option, bad URL, unsupported scheme"),
        (3, "network: DNS, connect, reset or timeout after the retries"),
        (4, "HTTP: an error status (4xx/5xx) after the retries, or a broken response"),
        (5, "the remote file changed during the download"),
        (6, "integrity: size or checksum mismatch"),
        (7, "local I/O: disk full, permission, missing folder"),
        (8, "TLS: certificate verification or handshake failure"),
        (130, "interrupted"),
    ]

    static var text: String {
        var lines = [
            "fastpull \(fastpullVersion) — fast, verified downloads over parallel connections",
            "",
            "USAGE: fastpull [OPTIONS] URL",
            "",
            "OPTIONS:",
        ]
        for option in OptionTable.all {
            var names = option.short.map { "-\($0), " } ?? "    "
            names += "--\(option.long)"
            if case .value(let placeholder) = option.kind { names += " \(placeholder)" }
            lines.append("  " + names.padding(toLength: 30, withPad: " ", startingAt: 0) + option.help)
        }
        lines.append("")
        lines.append("EXIT CODES:")
        for (code, meaning) in exitCodes {
            lines.append("  " + String(code).padding(toLength: 5, withPad: " ", startingAt: 0) + meaning)
        }
        return lines.joined(separator: "\n")
    }
}
