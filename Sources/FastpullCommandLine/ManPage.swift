import Fastpull

/// The `fastpull(1)` manual page in roff, generated from ``OptionTable`` and ``ExitCodeTable`` (so it
/// never drifts from `--help`): `fastpull --man | man -l -` shows it.
package enum ManPage {
    package static var text: String {
        var lines = [
            ".TH FASTPULL 1 \"\" \"fastpull \(fastpullVersion)\" \"User Commands\"",
            ".SH NAME",
            "fastpull \\- fast, verified downloads over parallel connections",
            ".SH SYNOPSIS",
            ".B fastpull",
            "[\\fIOPTIONS\\fR] \\fIURL\\fR...",
            ".br",
            ".B fastpull",
            "[\\fIOPTIONS\\fR] \\fB\\-i\\fR \\fIFILE\\fR",
            ".SH DESCRIPTION",
            escaped(
                "fastpull probes a file, splits it into byte ranges fetched over parallel HTTP/1.1 (and TLS) "
                    + "connections, writes every byte in place, hashes the file while it arrives, and moves it "
                    + "to its name only once its size and checksums are verified. An interrupted download "
                    + "resumes where it stopped. Sizes take K, M, G or KiB, MiB, GiB (all powers of 1024)."),
        ]
        for group in OptionSpec.Group.allCases {
            lines.append(".SH \(group.rawValue) OPTIONS")
            for option in OptionTable.all where option.group == group {
                lines.append(".TP")
                var names = option.short.map { "\\fB\\-\($0)\\fR, " } ?? ""
                names += "\\fB\\-\\-\(escaped(option.long))\\fR"
                if case .value(let placeholder) = option.kind { names += " \\fI\(escaped(placeholder))\\fR" }
                lines.append(names)
                lines.append(escaped(option.help))
            }
        }
        lines.append(".SH EXIT STATUS")
        lines.append(escaped("A batch exits with its first failed file's code."))
        for (code, meaning) in ExitCodeTable.rows {
            lines.append(".TP")
            lines.append("\\fB\(code)\\fR")
            lines.append(escaped(meaning))
        }
        lines.append(".SH ENVIRONMENT")
        lines.append(
            escaped(
                "http_proxy, https_proxy, all_proxy, no_proxy (and their upper-case forms) choose http:// proxies "
                    + "(a SOCKS one is refused with exit 2); SSL_CERT_FILE and SSL_CERT_DIR replace the system's certificate authorities; NO_COLOR "
                    + "and TERM=dumb turn colour (and, for dumb, cursor movement) off."))
        lines.append(".SH SEE ALSO")
        lines.append("curl(1), wget(1), aria2c(1)")
        return lines.joined(separator: "\n") + "\n"
    }

    /// `text` with roff's special characters escaped, and no line starting with a control character.
    static func escaped(_ text: String) -> String {
        let text = text.replacing("\\", with: "\\e").replacing("-", with: "\\-")
        return text.hasPrefix(".") || text.hasPrefix("'") ? "\\&" + text : text
    }
}
