import Fastpull

/// One command-line option of `fastpull`: its names, whether it takes a value, where `--help` lists
/// it, and its help text.
package struct OptionSpec: Sendable {
    /// Whether the option stands alone or takes a value.
    package enum Kind: Sendable {
        /// `--quiet`: present or not.
        case flag
        /// `--output PATH`: takes a value, shown in `--help` as the placeholder.
        case value(placeholder: String)
    }

    /// The sections of `--help`, in order.
    package enum Group: String, Sendable, CaseIterable {
        case output = "OUTPUT"
        case transfer = "TRANSFER"
        case sources = "SOURCES"
        case http = "HTTP"
        case integrity = "INTEGRITY"
        case batch = "BATCH"
        case display = "DISPLAY"
    }

    /// The long name, without the dashes.
    package var long: String
    /// The one-letter name, if any.
    package var short: Character?
    /// Flag or value.
    package var kind: Kind
    /// The `--help` section.
    package var group: Group
    /// Whether it may be given more than once, every value counting (`--header`).
    package var repeatable: Bool
    /// One line of help.
    package var help: String

    /// Creates an option.
    package init(
        _ long: String, short: Character? = nil, _ kind: Kind, group: Group, repeatable: Bool = false,
        help: String
    ) {
        self.long = long
        self.short = short
        self.kind = kind
        self.group = group
        self.repeatable = repeatable
        self.help = help
    }

    /// Whether the option takes a value.
    package var takesValue: Bool {
        if case .value = kind { return true }
        return false
    }

    /// `-o, --output PATH` as `--help` shows it.
    package var synopsis: String {
        var names = short.map { "-\($0), " } ?? "    "
        names += "--\(long)"
        if case .value(let placeholder) = kind { names += " \(placeholder)" }
        return names
    }
}

/// Every option `fastpull` accepts; the parser and `--help` are both driven by this table.
package enum OptionTable {
    /// The options, in `--help` order within each group.
    package static let all: [OptionSpec] = [
        // Output
        OptionSpec(
            "output", short: "o", .value(placeholder: "PATH"), group: .output,
            help: "Write to PATH (one URL only). Default: the server's Content-Disposition name, else the "
                + "last part of the URL's path, else index.html."),
        OptionSpec(
            "dir", short: "d", .value(placeholder: "DIR"), group: .output,
            help: "Save into DIR (created if missing)."),
        OptionSpec(
            "force", .flag, group: .output,
            help: "Download again whatever is there, and replace it once the new file is verified."),
        OptionSpec(
            "update", .flag, group: .output,
            help: "Keep an existing file that matches its checksum (or its record); fetch again and "
                + "replace one that does not."),
        OptionSpec(
            "no-clobber", .flag, group: .output,
            help: "Keep a file that is already there as it is, without looking at it, and go on: exit 0 "
                + "(wget's -nc)."),
        OptionSpec(
            "auto-rename", .flag, group: .output,
            help: "Save beside a file that is already there, as NAME.1, NAME.2, … (wget's numbering, "
                + "aria2's auto-file-renaming)."),
        OptionSpec(
            "remote-time", short: "R", .flag, group: .output,
            help: "Give the file the server's Last-Modified time, as wget does (curl and aria2: -R)."),
        OptionSpec(
            "range", short: "r", .value(placeholder: "START-END"), group: .output,
            help: "Save only these bytes of the file (counted from 0, END included): START-END, START- "
                + "(to the end) or -N (the last N), as curl's -r; fetched in segments and resumed like "
                + "any file."),
        OptionSpec(
            "dry-run", .flag, group: .output,
            help: "Probe and print the plan (size, validators, ranges, digests, segments); fetch nothing."),

        // Transfer
        OptionSpec(
            "connections", short: "n", .value(placeholder: "N|auto"), group: .transfer,
            help: "Parallel connections per file, 1-128, or auto to find the best count (default: auto)."),
        OptionSpec(
            "max-connections", .value(placeholder: "N"), group: .transfer,
            help:
                "Most connections auto may open, 1-128 (default: \(Configuration.Defaults.maximumConnections))."
        ),
        OptionSpec(
            "min-segment", .value(placeholder: "SIZE"), group: .transfer,
            help: "Smallest segment, e.g. 1M or 512KiB (default: 1MiB)."),
        OptionSpec(
            "pipelining", .value(placeholder: "auto|on|off"), group: .transfer,
            help:
                "Send a connection's next request before its answer ends: auto (round trips of 2 ms or more), on, off."
        ),
        OptionSpec(
            "limit-rate", .value(placeholder: "SIZE/s"), group: .transfer,
            help: "Receive at most this many bytes a second per file, e.g. 500K/s or 2MiB."),
        OptionSpec(
            "total-rate", .value(placeholder: "SIZE/s"), group: .transfer,
            help: "Receive at most this many bytes a second for all files together (-j 4 included)."),
        OptionSpec(
            "speed-limit", short: "Y", .value(placeholder: "SIZE/s"), group: .transfer,
            help: "Stop (resumable) when slower than this for --speed-time; 0 turns it off (default: 1K/s)."),
        OptionSpec(
            "speed-time", short: "y", .value(placeholder: "SECONDS"), group: .transfer,
            help: "How long a download may stay under --speed-limit (default: 60)."),
        OptionSpec(
            "timeout", .value(placeholder: "SECONDS"), group: .transfer,
            help: "Abandon a connection that receives nothing for this long (default: 30)."),
        OptionSpec(
            "connect-timeout", .value(placeholder: "SECONDS"), group: .transfer,
            help: "Give up connecting after this long (default: 15)."),
        OptionSpec(
            "stall-timeout", .value(placeholder: "SECONDS"), group: .transfer,
            help: "Replace a connection that receives nothing for this long (default: 10)."),
        OptionSpec(
            "retries", .value(placeholder: "N"), group: .transfer,
            help: "Retries per segment after a failure (default: 5)."),
        OptionSpec(
            "max-time", short: "m", .value(placeholder: "SECONDS"), group: .transfer,
            help: "Stop the whole run after this long (exit 3); what was fetched is kept, and the same "
                + "command resumes it (curl's -m)."),
        OptionSpec(
            "retry-max-time", .value(placeholder: "SECONDS"), group: .transfer,
            help: "Retry failures in a row for at most this long from the first (without --retries, as "
                + "many times as that allows)."),
        OptionSpec(
            "retry-delay", .value(placeholder: "SECONDS"), group: .transfer,
            help: "Wait this long before the first retry, twice as long before each next, up to 8 s "
                + "(default: 0.25)."),
        OptionSpec(
            "retry-connrefused", .flag, group: .transfer,
            help: "Retry refused connections, and host names that do not resolve yet, with the whole "
                + "--retries budget (a service still starting)."),
        OptionSpec(
            "restart", .flag, group: .transfer,
            help: "Discard the progress of an interrupted download and start from zero."),
        OptionSpec(
            "no-restart", .flag, group: .transfer,
            help: "Fail (exit 5) instead of starting over when the remote file changed."),
        OptionSpec(
            "continue", short: "c", .flag, group: .transfer,
            help:
                "Resume, never start over (as --no-restart); a file a run saved before is kept while the server still offers it; another program's partial file is continued once its last 64 KiB match the server's."
        ),
        OptionSpec(
            "trace", .value(placeholder: "FILE"), group: .transfer,
            help: "Write each connection's ranges over time to FILE (JSON lines; one URL only)."),

        // HTTP
        OptionSpec(
            "header", short: "H", .value(placeholder: "'NAME: VALUE'"), group: .http, repeatable: true,
            help: "Send this header field with every request. Repeatable."),
        OptionSpec(
            "user-agent", short: "A", .value(placeholder: "TEXT"), group: .http,
            help: "Send this User-Agent (default: fastpull/VERSION)."),
        OptionSpec(
            "user", short: "u", .value(placeholder: "USER:PASSWORD"), group: .http,
            help: "HTTP Basic credentials for the URL's host (default: ~/.netrc)."),
        OptionSpec(
            "netrc-file", .value(placeholder: "FILE"), group: .http,
            help: "Read credentials from FILE instead of ~/.netrc."),
        OptionSpec(
            "cookie", short: "b", .value(placeholder: "FILE|NAME=VALUE"), group: .http, repeatable: true,
            help: "Send the cookies of this Netscape cookie file where they belong, or NAME=VALUE to the "
                + "URL's host (curl's -b; wget's and aria2's load-cookies). Repeatable."),
        OptionSpec(
            "cookie-jar", .value(placeholder: "FILE"), group: .http,
            help: "Write the run's cookies to FILE (Netscape format) when it ends (curl's -c, which is "
                + "--continue here)."),
        OptionSpec(
            "no-cookies", .flag, group: .http,
            help: "Keep no cookie a server sets (by default a run sends them back where they belong, as "
                + "wget does)."),
        OptionSpec(
            "proxy", .value(placeholder: "URL"), group: .http,
            help: "Use this proxy: http://, socks5h:// (it resolves names) or socks5:// ('' for none). "
                + "Default: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY."),
        OptionSpec(
            "noproxy", .value(placeholder: "LIST"), group: .http,
            help: "Comma-separated hosts or .domains reached directly, '*' for all."),
        OptionSpec(
            "ipv4", short: "4", .flag, group: .http, help: "Connect over IPv4 only."),
        OptionSpec(
            "ipv6", short: "6", .flag, group: .http, help: "Connect over IPv6 only."),
        OptionSpec(
            "resolve", .value(placeholder: "HOST:PORT:ADDRESSES"), group: .http, repeatable: true,
            help: "Connect to ADDRESSES (IP addresses, comma-separated) for HOST on PORT instead of what "
                + "the name resolves to: one edge or cache node. The URL, Host and TLS name stay the "
                + "host's. Repeatable."),
        OptionSpec(
            "interface", .value(placeholder: "NAME|ADDRESS"), group: .http,
            help: "Connect from this IP address, or from the address of this network interface (eth0), "
                + "as curl's --interface does (wget's spelling is read too)."),
        OptionSpec(
            "cacert", .value(placeholder: "FILE"), group: .http,
            help: "Also trust the certificate authorities in this PEM file."),
        OptionSpec(
            "cert", short: "E", .value(placeholder: "FILE"), group: .http,
            help: "Present this client certificate (PEM; its key may follow in the same file) to a "
                + "server that asks for one (curl's --cert)."),
        OptionSpec(
            "key", .value(placeholder: "FILE"), group: .http,
            help:
                "The client certificate's private key (PEM, unencrypted), when it is not in the --cert file."),
        OptionSpec(
            "insecure", short: "k", .flag, group: .http,
            help: "Do not verify TLS certificates (unsafe; for testing)."),

        // Integrity
        OptionSpec(
            "checksum", .value(placeholder: "ALGO=VALUE"), group: .integrity, repeatable: true,
            help: "Fail unless the file has this digest (sha256/sha512/sha1/md5/crc32c). Repeatable."),
        OptionSpec(
            "checksum-file", .value(placeholder: "PATH|URL"), group: .integrity, repeatable: true,
            help: "Fail unless the file matches its line in this sha256sum-style file. Repeatable."),
        OptionSpec(
            "sha256", .flag, group: .integrity,
            help: "Compute the file's SHA-256 as it downloads and print it (~0.7 CPU-s per GiB)."),
        OptionSpec(
            "verify", .flag, group: .integrity,
            help: "Re-hash a file already saved against its record instead of trusting its size and time "
                + "(a changed one fails, or is fetched again with --force); implies --sha256."),
        OptionSpec(
            "max-filesize", .value(placeholder: "SIZE"), group: .integrity,
            help: "Refuse a file larger than SIZE (e.g. 500M, 2GiB) before fetching it, when the server "
                + "tells its size; one that does not tell fails when it ends larger (exit 6)."),
        OptionSpec(
            "keep-partial", .flag, group: .integrity,
            help: "After a checksum mismatch, keep the bytes in OUTPUT.part (never resumed)."),

        // Sources
        OptionSpec(
            "mirror", .value(placeholder: "URL"), group: .sources, repeatable: true,
            help:
                "The same file on another server: bytes come from every source, each by its speed (one URL; needs a checksum or --mirrors-unverified). Repeatable."
        ),
        OptionSpec(
            "mirrors-unverified", .flag, group: .sources,
            help:
                "Use the mirrors even with no checksum to verify the file (sources that differ give a mixed file)."
        ),
        OptionSpec(
            "no-linked-mirrors", .flag, group: .sources,
            help: "Ignore the mirrors a server names in Link: rel=duplicate fields (RFC 6249)."),
        OptionSpec(
            "no-follow-metalink", .flag, group: .sources,
            help: "Save a URL that is a Metalink document as it is, instead of the file it describes."),
        OptionSpec(
            "metalink", short: "M", .value(placeholder: "FILE|URL"), group: .sources, repeatable: true,
            help:
                "Fetch the files a Metalink 4 (.meta4) file describes, from all their sources, checked by its hashes and piece hashes."
        ),

        // Batch
        OptionSpec(
            "input-file", short: "i", .value(placeholder: "FILE|-"), group: .batch,
            help:
                "Also fetch every line of FILE ('-' for stdin, each file started as its line comes): URL [MIRROR-URL...] [OUTPUT] [sha256=HEX]; # comments."
        ),
        OptionSpec(
            "globoff", short: "g", .flag, group: .batch,
            help: "Take [ ] and { } in URLs as they are; by default a URL's [00001-00005], [a-z], "
                + "[0-100:10] and {a,b} expand it into a batch, as curl's do."),
        OptionSpec(
            "parallel-files", short: "j", .value(placeholder: "N"), group: .batch,
            help: "Fetch up to N files at once, 1-64 (default: 4)."),
        OptionSpec(
            "max-connections-per-host", .value(placeholder: "N"), group: .batch,
            help:
                "Connections to one host (name and port) across all files, 1-256 (default: \(Configuration.Defaults.maximumConnectionsPerHost))."
        ),

        OptionSpec(
            "on-download-complete", .value(placeholder: "CMD"), group: .batch,
            help: "Run CMD for each file saved (or found complete) as it ends, with aria2's arguments "
                + "(ID, 1, PATH) and FASTPULL_PATH, FASTPULL_URL, FASTPULL_STATUS, FASTPULL_SIZE, … "
                + "set; one word runs as a program, anything else through /bin/sh."),
        OptionSpec(
            "on-download-error", .value(placeholder: "CMD"), group: .batch,
            help: "Run CMD for each file that fails (not one stopped), as --on-download-complete, with "
                + "FASTPULL_EXIT_CODE and FASTPULL_ERROR set."),

        // Display
        OptionSpec(
            "json", .flag, group: .display,
            help: "Print newline-delimited JSON events on stdout (see the README for the fields)."),
        OptionSpec(
            "write-out", short: "w", .value(placeholder: "FORMAT"), group: .display,
            help: "After each file, print FORMAT on stdout with curl's %{http_code}, %{size_download}, "
                + "%{url_effective}, %{filename_effective}, %{time_total}, %{speed_download}, … and \\n; "
                + "@FILE reads it from FILE."),
        OptionSpec(
            "dump-header", short: "D", .value(placeholder: "FILE"), group: .display,
            help: "Write every response head (each redirect's and each segment's, secrets redacted as -v "
                + "shows them) to FILE as it arrives; - for stdout (curl's -D)."),
        OptionSpec(
            "log", short: "l", .value(placeholder: "FILE"), group: .display,
            help: "Also append every message printed (warnings, errors, each file's outcome, -v's "
                + "heads) to FILE, each with its UTC time (aria2's -l)."),
        OptionSpec("quiet", short: "q", .flag, group: .display, help: "Print nothing but errors."),
        OptionSpec(
            "verbose", short: "v", .flag, group: .display,
            help:
                "Show each request and response head (credentials and signatures redacted), retries and connection changes."
        ),
        OptionSpec(
            "config", short: "K", .value(placeholder: "FILE"), group: .display,
            help: "Read options from FILE instead of ~/.config/fastpull/config (one a line: NAME = VALUE; "
                + "curl's -K); the command line's win."),
        OptionSpec(
            "no-config", .flag, group: .display, help: "Read no configuration file."),
        OptionSpec("help", short: "h", .flag, group: .display, help: "Show this help."),
        OptionSpec(
            "completions", .value(placeholder: "SHELL"), group: .display,
            help:
                "Print the completion script for bash, zsh or fish, e.g. fastpull --completions bash > /etc/bash_completion.d/fastpull."
        ),
        OptionSpec("man", .flag, group: .display, help: "Print the manual page (fastpull --man | man -l -)."),
        OptionSpec("version", short: "V", .flag, group: .display, help: "Show the version."),
    ]

    /// The option with this long name.
    package static func option(long name: String) -> OptionSpec? { all.first { $0.long == name } }
    /// The option with this one-letter name.
    package static func option(short name: Character) -> OptionSpec? { all.first { $0.short == name } }
}
