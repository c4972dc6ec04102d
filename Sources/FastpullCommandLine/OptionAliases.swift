/// Other tools' spellings of what fastpull does, read as fastpull's own before parsing, so a script
/// written for curl, wget or aria2c runs: `-O`, `-J`, `-L` (curl: name from the server, follow
/// redirects — fastpull's defaults), `-s`/`--silent` (`--quiet`), `-C -` (continue — fastpull's
/// default), `-x URL` (`--proxy`; aria2's `-x N`: `--max-connections`), `-s N` (aria2's split:
/// `--max-connections`), `-P DIR`/`--output-dir DIR` (`--dir`), `--retry N` (`--retries`),
/// `-N`/`--timestamping` (wget: fetch only what changed — what a fastpull rerun does), wget's `-nc`
/// (`--no-clobber`), wget's `--bind-address` (`--interface`), wget's and aria2's `--load-cookies`
/// and `--save-cookies` (`--cookie`, `--cookie-jar`), aria2's `--auto-file-renaming`
/// (`--auto-rename`). A spelling that means something else here is refused with fastpull's: aria2's
/// `-k SIZE` (`--min-segment`; `-k` is curl's `--insecure`).
package enum OptionAliases {
    /// One spelling, and what it becomes (nothing, when fastpull does it anyway).
    package struct Alias: Sendable {
        /// As the other tool spells it.
        package var spelling: String
        /// Whose spelling it is.
        package var tool: String
        /// Fastpull's, for the README's table.
        package var fastpull: String
    }

    /// The spellings read, for the README's table (a test keeps the two the same).
    package static let table: [Alias] = [
        Alias(
            spelling: "-O, --remote-name", tool: "curl", fastpull: "(default: the server's or the URL's name)"
        ),
        Alias(spelling: "-J, --remote-header-name", tool: "curl", fastpull: "(default)"),
        Alias(spelling: "-L, --location", tool: "curl", fastpull: "(default: redirects followed)"),
        Alias(spelling: "-s, --silent", tool: "curl", fastpull: "-q, --quiet"),
        Alias(
            spelling: "-f, -S, -fsSL (clusters of f, s, S, L, O, J, #)", tool: "curl",
            fastpull: "(defaults; s: --quiet)"),
        Alias(spelling: "-C -, --continue-at -", tool: "curl", fastpull: "(default: partial files resume)"),
        Alias(spelling: "-x URL, --proxy URL", tool: "curl", fastpull: "--proxy URL"),
        Alias(spelling: "--retry N", tool: "curl", fastpull: "--retries N"),
        Alias(spelling: "--output-dir DIR", tool: "curl", fastpull: "-d, --dir DIR"),
        Alias(spelling: "-P DIR, --directory-prefix DIR", tool: "wget", fastpull: "-d, --dir DIR"),
        Alias(
            spelling: "-N, --timestamping", tool: "wget",
            fastpull: "(default: a rerun fetches only what changed)"),
        Alias(spelling: "-x N", tool: "aria2c", fastpull: "--max-connections N"),
        Alias(spelling: "-s N, --split N", tool: "aria2c", fastpull: "--max-connections N"),
        Alias(spelling: "--max-overall-download-limit RATE", tool: "aria2c", fastpull: "--total-rate RATE"),
        Alias(
            spelling: "-k SIZE", tool: "aria2c",
            fastpull: "refused: --min-segment SIZE (-k is curl's --insecure)"),
        Alias(spelling: "-nc", tool: "wget", fastpull: "--no-clobber"),
        Alias(spelling: "--bind-address ADDRESS", tool: "wget", fastpull: "--interface ADDRESS"),
        Alias(spelling: "--load-cookies FILE", tool: "wget, aria2c", fastpull: "--cookie FILE"),
        Alias(spelling: "--save-cookies FILE", tool: "wget, aria2c", fastpull: "--cookie-jar FILE"),
        Alias(spelling: "--auto-file-renaming=true", tool: "aria2c", fastpull: "--auto-rename"),
    ]

    /// `arguments` with the other tools' spellings as fastpull's (up to `--`).
    package static func rewrite(_ arguments: [String]) throws(UsageError) -> [String] {
        var result: [String] = []
        var index = 0
        func next() -> String? { index + 1 < arguments.count ? arguments[index + 1] : nil }
        func isNumber(_ text: String?) -> Bool {
            text.map { !$0.isEmpty && $0.allSatisfy(\.isNumber) } ?? false
        }
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" {
                result += arguments[index...]
                break
            }
            switch argument {
            case "-O", "--remote-name", "-J", "--remote-header-name", "-L", "--location", "-N",
                "--timestamping":
                break
            case "-s" where isNumber(next()), "--split":
                result += ["--max-connections", next() ?? ""]
                index += 1
            case "-s", "--silent":
                result.append("--quiet")
            case "-C", "--continue-at":
                guard next() == "-" else {
                    throw UsageError(
                        message:
                            "error: \(argument) takes '-' here (continue where the file stops, which fastpull does by default); an offset is not supported"
                    )
                }
                index += 1
            case "-x" where isNumber(next()):
                result += ["--max-connections", next() ?? ""]
                index += 1
            case "-x":
                result.append("--proxy")
            case "--retry":
                result.append("--retries")
            case "--max-overall-download-limit":
                result.append("--total-rate")
            case "-P", "--directory-prefix", "--output-dir":
                result.append("--dir")
            case "-k" where next().map(isSize) ?? false:
                throw UsageError(
                    message:
                        "error: -k is curl's --insecure here; for aria2's segment size (-k \(next() ?? "")) use --min-segment \(next() ?? "")"
                )
            case "-nc":
                result.append("--no-clobber")
            case "--bind-address":
                result.append("--interface")
            case "--load-cookies":
                result.append("--cookie")
            case "--save-cookies":
                result.append("--cookie-jar")
            case _ where argument.hasPrefix("--bind-address="):
                result.append("--interface=" + argument.dropFirst("--bind-address=".count))
            case "--auto-file-renaming=true", "--auto-file-renaming":
                result.append("--auto-rename")
            case _ where isCurlCluster(argument):
                // `-fsSL` and the like: fail on errors, show errors, follow, remote name — all
                // fastpull's defaults — and silent.
                if argument.contains("s") { result.append("--quiet") }
            default:
                result.append(argument)
            }
            index += 1
        }
        return result
    }

    /// Whether `argument` is a cluster of curl's value-less letters (`-fsSL`, `-sS`, `-LO`) that
    /// fastpull's own short options do not spell.
    private static func isCurlCluster(_ argument: String) -> Bool {
        guard argument.count > 2, argument.hasPrefix("-"), !argument.hasPrefix("--") else { return false }
        return argument.dropFirst().allSatisfy { "fsSLOJ#".contains($0) }
    }

    /// Whether `text` reads as a size aria2 would take (`1M`, `20480`, `512K`).
    private static func isSize(_ text: String) -> Bool {
        guard let last = text.last else { return false }
        let digits = "KMGkmg".contains(last) ? text.dropLast() : Substring(text)
        return !digits.isEmpty && digits.allSatisfy(\.isNumber)
    }
}
