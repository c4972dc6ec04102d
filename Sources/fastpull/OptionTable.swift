/// One command-line option: its names, whether it takes a value, and its help text.
struct OptionSpec: Sendable {
    enum Kind: Sendable {
        case flag
        case value(placeholder: String)
    }

    var long: String
    var short: Character?
    var kind: Kind
    var help: String

    var takesValue: Bool {
        if case .value = kind { return true }
        return false
    }
}

/// Every option `fastpull` accepts. `--help` is generated from this table.
enum OptionTable {
    static let all: [OptionSpec] = [
        OptionSpec(
            long: "output", short: "o", kind: .value(placeholder: "PATH"),
            help: "Write to PATH (default: the last part of the URL's path)."),
        OptionSpec(
            long: "connections", short: "n", kind: .value(placeholder: "N|auto"),
            help: "Parallel connections, 1-128, or auto to find the best count (default: auto)."),
        OptionSpec(
            long: "max-connections", short: nil, kind: .value(placeholder: "N"),
            help: "Most connections auto may open, 1-128 (default: 16)."),
        OptionSpec(
            long: "stall-timeout", short: nil, kind: .value(placeholder: "SECONDS"),
            help: "Replace a connection that receives nothing for this long (default: 10)."),
        OptionSpec(
            long: "trace", short: nil, kind: .value(placeholder: "FILE"),
            help: "Write each connection's ranges over time to FILE (JSON lines)."),
        OptionSpec(
            long: "min-segment", short: nil, kind: .value(placeholder: "SIZE"),
            help: "Smallest segment, e.g. 1M or 512KiB (default: 1MiB)."),
        OptionSpec(
            long: "checksum", short: nil, kind: .value(placeholder: "ALGO=VALUE"),
            help: "Fail unless the file has this digest (sha256/sha512/sha1/md5/crc32c). Repeatable."),
        OptionSpec(
            long: "checksum-file", short: nil, kind: .value(placeholder: "PATH|URL"),
            help: "Fail unless the file matches its line in this sha256sum-style file. Repeatable."),
        OptionSpec(
            long: "keep-partial", short: nil, kind: .flag,
            help: "After a checksum mismatch, keep the bytes in OUTPUT.part (never resumed)."),
        OptionSpec(
            long: "cacert", short: nil, kind: .value(placeholder: "FILE"),
            help: "Also trust the certificate authorities in this PEM file."),
        OptionSpec(
            long: "insecure", short: "k", kind: .flag,
            help: "Do not verify TLS certificates (unsafe; for testing)."),
        OptionSpec(
            long: "retries", short: nil, kind: .value(placeholder: "N"),
            help: "Retries per segment after a failure (default: 5)."),
        OptionSpec(
            long: "connect-timeout", short: nil, kind: .value(placeholder: "SECONDS"),
            help: "Give up connecting after this long (default: 15)."),
        OptionSpec(
            long: "timeout", short: nil, kind: .value(placeholder: "SECONDS"),
            help: "Abandon a connection that receives nothing for this long (default: 30)."),
        OptionSpec(
            long: "restart", short: nil, kind: .flag,
            help: "Discard the progress of an interrupted download and start from zero."),
        OptionSpec(
            long: "no-restart", short: nil, kind: .flag,
            help: "Fail (exit 5) instead of starting over when the remote file changed."),
        OptionSpec(long: "quiet", short: "q", kind: .flag, help: "Print nothing but errors."),
        OptionSpec(long: "help", short: "h", kind: .flag, help: "Show this help."),
        OptionSpec(long: "version", short: "V", kind: .flag, help: "Show the version."),
    ]

    static func option(long name: String) -> OptionSpec? { all.first { $0.long == name } }
    static func option(short name: Character) -> OptionSpec? { all.first { $0.short == name } }
}
