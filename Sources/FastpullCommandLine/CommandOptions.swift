import Fastpull
import FastpullHTTP
import FoundationEssentials
import Glibc

/// The typed, validated options of one `fastpull` run. Every error names the option and the bad
/// value; nothing here touches the network.
package struct CommandOptions: Sendable {
    /// The URLs given as arguments, validated.
    package var urls: [URL]
    /// `-o`: the output path of the one URL.
    package var output: String?
    /// `-d`: the folder outputs go into.
    package var directory: String?
    /// `-i`: the input file (`-` for stdin).
    package var inputFile: String?
    /// `-j`: files fetched at once.
    package var parallelFiles = Configuration.Defaults.parallelFiles
    /// `--max-connections-per-host`.
    package var maximumConnectionsPerHost = Configuration.Defaults.maximumConnectionsPerHost
    /// `--force`: always fetch again and replace existing files.
    package var force = false
    /// `--update`: keep an existing file that verifies, replace one that does not.
    package var update = false
    /// `--max-time`: how long the whole run may take before it stops (progress kept).
    package var maximumTime: Duration?
    /// `--no-clobber`: keep an existing file as it is and count it done.
    package var noClobber = false
    /// `--auto-rename`: save beside an existing file, as `NAME.1`, `NAME.2`, ….
    package var autoRename = false
    /// `--total-rate`: the most bytes a second all files receive together.
    package var totalRate: Int64?
    /// `--dry-run`: probe and plan only.
    package var dryRun = false
    /// `--json`: NDJSON events on stdout.
    package var json = false
    /// `-q`: errors only.
    package var quiet = false
    /// Everything the library is told, before per-URL credentials and proxy.
    package var configuration: Configuration
    /// `--checksum-file` values, paths or http(s) URLs, read before the downloads start.
    package var checksumFiles: [String] = []
    /// `-u user:password`.
    package var user: Credentials?
    /// `--netrc-file`.
    package var netrcFile: String?
    /// `--proxy`: nil for the environment, "" for none.
    package var proxy: String?
    /// `--noproxy`, split at commas.
    package var noProxy: [String]?
    /// `--mirror`: other URLs of the one file.
    package var mirrors: [URL] = []
    /// `--metalink` values, paths or http(s) URLs, read before the downloads start.
    package var metalinks: [String] = []
    /// `--cookie-jar`: where the run's cookies are written when it ends.
    package var cookieJarFile: String?
    /// `-D`: where response heads are written (`-` for standard output).
    package var dumpHeader: String?
    /// `-v`: print each exchange, retries and connection changes.
    package var verbose = false
    /// `--log`: the file messages are also written to.
    package var logFile: String?
    /// `-w`: what is printed after each file.
    package var writeOut: WriteOut?
    /// `--on-download-complete`: a command run for each file saved.
    package var onComplete: String?
    /// `--on-download-error`: a command run for each file that failed.
    package var onError: String?

    /// Validates parsed arguments.
    ///
    /// - Throws: ``UsageError`` naming the option and the value at fault.
    package init(_ parsed: ParsedArguments) throws(UsageError) {
        var urls: [URL] = []
        let globs = !parsed.has("globoff")
        for argument in parsed.positionals {
            // `model-[00001-00005]-of-00005.safetensors`, `{a,b}`: a batch, as curl expands it.
            for text in globs ? try URLGlob.expand(argument) : [argument] {
                urls.append(try Self.url(from: text))
            }
        }
        self.urls = urls
        inputFile = parsed.last("input-file")
        if let inputFile, inputFile != "-", !FileManager.default.isReadableFile(atPath: inputFile) {
            throw UsageError(message: "error: --input-file: cannot read '\(inputFile)'")
        }
        for source in parsed.all("metalink") {
            let isURL = ["http", "https"].contains(URL(string: source)?.scheme?.lowercased() ?? "")
            guard isURL || FileManager.default.isReadableFile(atPath: source) else {
                throw UsageError(message: "error: --metalink: cannot read '\(source)'")
            }
            metalinks.append(source)
        }
        for text in parsed.all("mirror") {
            do {
                mirrors.append(try Self.url(from: text))
            } catch {
                throw UsageError(message: "error: --mirror: " + error.message.dropFirst("error: ".count))
            }
        }
        guard !urls.isEmpty || inputFile != nil || !metalinks.isEmpty else {
            throw UsageError(
                message: "error: missing URL (usage: fastpull [OPTIONS] URL...; see fastpull --help)")
        }
        quiet = parsed.has("quiet")
        if parsed.has("verbose") && quiet {
            throw UsageError(message: "error: --verbose and --quiet cannot be used together")
        }
        json = parsed.has("json")
        if json, parsed.last("output") == "-" {
            throw UsageError(
                message: "error: --json and --output -: both write to standard output; drop one of them")
        }
        force = parsed.has("force")
        update = parsed.has("update")
        noClobber = parsed.has("no-clobber")
        autoRename = parsed.has("auto-rename")
        let existing = ["force", "update", "no-clobber", "auto-rename"].filter { parsed.has($0) }
        if existing.count > 1 {
            throw UsageError(
                message:
                    "error: \(existing.map { "--" + $0 }.joined(separator: " and ")) cannot be used together: each says what to do with a file that is already there"
            )
        }
        dryRun = parsed.has("dry-run")
        if let path = parsed.last("output") {
            guard !path.isEmpty else { throw UsageError(option: "output", "expected a path", got: path) }
            // `-o -` is standard output, as curl and wget have it.
            output = path == "-" ? Self.standardOutputPath : path
        }
        if let path = parsed.last("dir") {
            guard !path.isEmpty else { throw UsageError(option: "dir", "expected a folder", got: path) }
            directory = path
        }
        if let text = parsed.last("parallel-files") {
            parallelFiles = try Self.integer(text, option: "parallel-files", in: 1...64)
        }
        if let text = parsed.last("max-connections-per-host") {
            maximumConnectionsPerHost = try Self.integer(
                text, option: "max-connections-per-host", in: 1...256)
        }

        var configuration = Configuration()
        verbose = parsed.has("verbose")
        configuration.diagnostics.verbose = verbose
        if let text = parsed.last("connections") {
            if text == "auto" {
                configuration.connections.count = .automatic
            } else {
                guard let count = Int(text), (1...128).contains(count) else {
                    throw UsageError(
                        option: "connections", "expected a number from 1 to 128 or 'auto'", got: text)
                }
                configuration.connections.count = .fixed(count)
            }
        }
        if let text = parsed.last("max-connections") {
            configuration.connections.maximum = try Self.integer(text, option: "max-connections", in: 1...128)
        }
        if let text = parsed.last("stall-timeout") {
            configuration.timeouts.stall = try Self.seconds(text, option: "stall-timeout")
        }
        configuration.diagnostics.traceFile = parsed.last("trace")
        if let text = parsed.last("min-segment") {
            guard let size = ByteSize.parse(text), size > 0 else {
                throw UsageError(option: "min-segment", "expected a size like 1M or 512KiB", got: text)
            }
            configuration.connections.minimumSegmentSize = size
        }
        if let text = parsed.last("pipelining") {
            guard let pipelining = Pipelining(rawValue: text) else {
                throw UsageError(option: "pipelining", "expected auto, on or off", got: text)
            }
            configuration.connections.pipelining = pipelining
        }
        if let text = parsed.last("limit-rate") {
            guard let rate = ByteSize.parseRate(text), rate > 0 else {
                throw UsageError(option: "limit-rate", "expected a rate like 500K/s or 2MiB/s", got: text)
            }
            configuration.connections.maximumBytesPerSecond = rate
        }
        if let text = parsed.last("total-rate") {
            guard let rate = ByteSize.parseRate(text), rate > 0 else {
                throw UsageError(option: "total-rate", "expected a rate like 500K/s or 2MiB/s", got: text)
            }
            totalRate = rate
        }
        if let text = parsed.last("speed-limit") {
            if text == "0" {
                configuration.timeouts.lowestSpeed = nil
            } else {
                guard let rate = ByteSize.parseRate(text), rate > 0 else {
                    throw UsageError(
                        option: "speed-limit", "expected a rate like 1K/s or 100KiB/s, or 0 for none",
                        got: text)
                }
                configuration.timeouts.lowestSpeed = LowestSpeed(
                    bytesPerSecond: rate,
                    duration: configuration.timeouts.lowestSpeed?.duration ?? LowestSpeed.standard.duration)
            }
        }
        if let text = parsed.last("speed-time") {
            let duration = try Self.seconds(text, option: "speed-time")
            configuration.timeouts.lowestSpeed?.duration = duration
        }
        if let text = parsed.last("retries") {
            configuration.retries.limit = try Self.integer(text, option: "retries", in: 0...1000)
        }
        if let text = parsed.last("retry-max-time") {
            configuration.retries.maximumTime = try Self.seconds(text, option: "retry-max-time")
            // The time decides, unless a count is given too.
            if !parsed.has("retries") { configuration.retries.limit = 1000 }
        }
        if let text = parsed.last("max-time") {
            maximumTime = try Self.seconds(text, option: "max-time")
        }
        if let text = parsed.last("retry-delay") {
            configuration.retries.baseDelay = try Self.seconds(text, option: "retry-delay")
        }
        configuration.retries.retriesRefusedConnections = parsed.has("retry-connrefused")
        if let text = parsed.last("connect-timeout") {
            configuration.timeouts.connect = try Self.seconds(text, option: "connect-timeout")
        }
        if let text = parsed.last("timeout") {
            configuration.timeouts.idle = try Self.seconds(text, option: "timeout")
        }
        for text in parsed.all("header") {
            configuration.request.headers.append(try Self.header(text))
        }
        if let text = parsed.last("user-agent") {
            guard !text.isEmpty, !text.contains(where: { $0 == "\r" || $0 == "\n" }) else {
                throw UsageError(option: "user-agent", "expected text on one line", got: text)
            }
            configuration.request.userAgent = text
        }
        if let text = parsed.last("user") {
            guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else {
                throw UsageError(option: "user", "expected USER:PASSWORD", got: text)
            }
            user = Credentials(
                user: String(text[..<colon]), password: String(text[text.index(after: colon)...]))
        }
        if let path = parsed.last("netrc-file") {
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw UsageError(message: "error: --netrc-file: cannot read '\(path)'")
            }
            netrcFile = path
        }
        if let text = parsed.last("proxy") {
            proxy = text.isEmpty ? "" : try Self.proxyURL(text).absoluteString
        }
        if parsed.has("ipv4") && parsed.has("ipv6") {
            throw UsageError(message: "error: -4 and -6 cannot be used together")
        }
        configuration.request.addressFamily = parsed.has("ipv4") ? .ipv4 : parsed.has("ipv6") ? .ipv6 : .any
        if let name = parsed.last("interface") {
            // An address of the system's or an interface's: what is not either is a typing error.
            guard Self.isIPLiteral(name) || if_nametoindex(name) != 0 else {
                throw UsageError(
                    option: "interface", "expected an IP address or a network interface", got: name)
            }
            configuration.request.localAddress = name
        }
        for text in parsed.all("resolve") {
            configuration.request.pinnedAddresses.append(try Self.addressPin(text))
        }
        if let text = parsed.last("noproxy") {
            noProxy = text.split(separator: ",").map { $0.trimmingSpaces() }
                .filter { !$0.isEmpty }
        }
        for text in parsed.all("checksum") {
            do {
                configuration.integrity.checksums.append(try Checksum(parsing: text))
            } catch {
                throw UsageError(message: "error: --checksum: \(error.message)")
            }
        }
        for source in parsed.all("checksum-file") {
            let isURL = ["http", "https"].contains(URL(string: source)?.scheme?.lowercased() ?? "")
            guard isURL || FileManager.default.isReadableFile(atPath: source) else {
                throw UsageError(message: "error: --checksum-file: cannot read '\(source)'")
            }
            checksumFiles.append(source)
        }
        configuration.integrity.keepsPartialOnMismatch = parsed.has("keep-partial")
        // The SHA-256 of a file nobody checks costs as much CPU as TLS: computed when asked for (a
        // checksum to verify is computed whatever this says).
        configuration.integrity.computesSHA256 = parsed.has("sha256") || parsed.has("verify")
        configuration.integrity.verifiesSavedFiles = parsed.has("verify")
        configuration.resume.keepsServerTime = parsed.has("remote-time")
        if let path = parsed.last("cacert") {
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw UsageError(message: "error: --cacert: cannot read '\(path)'")
            }
            configuration.tls.caFile = path
        }
        configuration.tls.insecure = parsed.has("insecure")
        for option in ["cert", "key"] {
            guard let path = parsed.last(option) else { continue }
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw UsageError(message: "error: --\(option): cannot read '\(path)'")
            }
        }
        configuration.tls.certificateFile = parsed.last("cert")
        configuration.tls.keyFile = parsed.last("key")
        if parsed.has("key") && !parsed.has("cert") {
            throw UsageError(
                message: "error: --key: is the key of a --cert client certificate, but there is none")
        }
        if parsed.has("restart") && parsed.has("no-restart") {
            throw UsageError(message: "error: --restart and --no-restart cannot be used together")
        }
        if parsed.has("restart") && parsed.has("continue") {
            throw UsageError(message: "error: --restart and --continue cannot be used together")
        }
        configuration.resume.fromJournal = !parsed.has("restart")
        // -c, --continue (wget's and curl's spelling): resume, and never start over.
        configuration.resume.restartsWhenRemoteChanges = !parsed.has("no-restart") && !parsed.has("continue")
        // -c also continues another program's partial file, once the server proves it the beginning.
        configuration.resume.adoptsPartialFile = parsed.has("continue")
        configuration.connections.maximumPerHost = maximumConnectionsPerHost
        configuration.sources.mixesUnverified = parsed.has("mirrors-unverified")
        configuration.sources.usesLinkedMirrors = !parsed.has("no-linked-mirrors")
        configuration.sources.followsMetalink = !parsed.has("no-follow-metalink")
        self.configuration = configuration
        try readScriptingOptions(parsed)
        try readCookieOptions(parsed)

        if inputFile == nil, metalinks.isEmpty {
            try checkSingleFileOptions(count: urls.count)
        }
        if !mirrors.isEmpty, urls.isEmpty {
            throw UsageError(
                message:
                    "error: --mirror: gives another source of the URL on the command line, but there is none (list a file's sources on one line of the input file)"
            )
        }
    }

    /// The path `-o -` stands for: the library writes a download there in order.
    package static let standardOutputPath = "/dev/stdout"

    /// Options that only make sense for one file, checked against the number of downloads.
    package func checkSingleFileOptions(count: Int) throws(UsageError) {
        guard count > 1 else { return }
        if output != nil {
            throw UsageError(
                message:
                    "error: --output: names one file, but there are \(count) URLs (use --dir, or an input file with OUTPUT per line)"
            )
        }
        if !configuration.integrity.checksums.isEmpty {
            throw UsageError(
                message:
                    "error: --checksum: applies to one file, but there are \(count) URLs (put sha256=HEX on each line of an input file)"
            )
        }
        if configuration.diagnostics.traceFile != nil {
            throw UsageError(message: "error: --trace: records one download, but there are \(count) URLs")
        }
        if !mirrors.isEmpty {
            throw UsageError(
                message:
                    "error: --mirror: gives sources of one file, but there are \(count) downloads (put a file's URLs on one line of an input file)"
            )
        }
    }

    /// What one download of the run fetches, and how.
    package struct Job: Sendable {
        /// The batch item.
        package var item: BatchItem
        /// Where it came from, for messages: `argument 2`, `list.txt:7` or `x.meta4: docs/a.pdf`.
        package var origin: String
    }

    /// One file of a `--metalink` document, with the document it came from.
    package struct MetalinkFile: Sendable {
        /// The path or URL of the document.
        package var source: String
        /// The file.
        package var file: Metalink.File

        /// Creates one.
        package init(source: String, file: Metalink.File) {
            self.source = source
            self.file = file
        }
    }

    /// Every download of the run: the URLs of the arguments, then the lines of the input file, each
    /// with its destination, checksums, credentials and proxy.
    ///
    /// - Parameters:
    ///   - lines: the parsed input file, if any.
    ///   - netrc: the credentials file in effect, if any.
    ///   - environment: the process environment (for the proxy variables).
    ///   - workingDirectory: where relative paths start.
    /// - Throws: ``UsageError`` for options that do not fit the number of downloads, or two downloads
    ///   with the same output path.
    package func jobs(
        lines: [BatchFile.Line], metalinks: [MetalinkFile] = [], netrc: Netrc?, environment: [String: String],
        workingDirectory: String
    ) throws(UsageError) -> [Job] {
        try checkSingleFileOptions(count: urls.count + lines.count + metalinks.count)
        let maker = jobMaker(netrc: netrc, environment: environment, workingDirectory: workingDirectory)
        var jobs: [Job] = []
        func add(
            _ url: URL, output: String?, checksums: [Checksum], origin: String, mirrors: [URL] = [],
            metalink: (file: Metalink.File, document: String)? = nil
        ) throws(UsageError) {
            jobs.append(
                try maker.job(
                    url, output: output, checksums: checksums, origin: origin, mirrors: mirrors,
                    metalink: metalink))
        }
        for (index, url) in urls.enumerated() {
            try add(url, output: output, checksums: [], origin: "argument \(index + 1)", mirrors: mirrors)
        }
        for var line in lines {
            // `-o` with a list of one line names that line's file (more lines are refused above).
            if line.output == nil, line.directory == nil { line.output = output }
            jobs.append(try maker.job(for: line))
        }
        for entry in metalinks {
            guard let first = entry.file.urls.first else { continue }
            // A Metalink file names its output; -o renames the only one.
            try add(
                first, output: output ?? entry.file.name, checksums: [],
                origin: "\(entry.source): \(entry.file.name)",
                metalink: (entry.file, "Metalink file \(entry.source)"))
        }
        var seen: [String: String] = [:]
        for job in jobs {
            guard case .file(let file) = job.item.destination else { continue }
            if let earlier = seen[file.path] {
                throw UsageError(
                    message:
                        "error: \(job.origin) and \(earlier) both write \(file.path(percentEncoded: false))")
            }
            seen[file.path] = job.origin
        }
        return jobs
    }

    /// Whether `path` is absolute and has no `.` or `..` component and no empty one (`//`): what
    /// `standardizedFileURL` would leave as it is.
    static func isStandardAbsolutePath(_ path: String) -> Bool {
        guard path.utf8.first == UInt8(ascii: "/") else { return false }
        for component in path.utf8.dropFirst().split(
            separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        where component.isEmpty || component.elementsEqual(".".utf8) || component.elementsEqual("..".utf8) {
            return false
        }
        return true
    }

    /// The proxy for `url`: `--proxy` (with `--noproxy`), else the environment's proxy for its scheme
    /// (its own variable, else `ALL_PROXY`, as the library picks it) with `--noproxy` replacing
    /// `NO_PROXY`, else the environment as the library reads it.
    ///
    /// - Throws: ``UsageError`` naming the variable when a proxy it reads with `--noproxy` (either
    ///   scheme's, as the library checks both) is not a usable `http://` one, a SOCKS proxy for one:
    ///   the download would otherwise not say where its proxy came from.
    package func proxySetting(for url: URL, environment: [String: String]) throws(UsageError) -> ProxySetting
    {
        if let proxy {
            return proxy.isEmpty ? .none : .url(proxy, bypass: noProxy ?? [])
        }
        guard let noProxy else { return .environment }
        let secure = url.scheme?.lowercased() == "https"
        var chosen: String?
        for scheme in [secure, !secure] {
            guard let (name, value) = ProxySetting.environmentProxy(secure: scheme, environment: environment)
            else { continue }
            do {
                try ProxySetting.check(value, source: name)
            } catch {
                throw UsageError(message: "error: \(error.message)")
            }
            if scheme == secure { chosen = value }
        }
        return chosen.map { .url($0, bypass: noProxy) } ?? .none
    }

    /// The credentials file in effect: `--netrc-file`, else `$HOME/.netrc` when it exists.
    ///
    /// - Throws: ``UsageError`` when `--netrc-file` cannot be read.
    package func loadNetrc(environment: [String: String]) throws(UsageError) -> Netrc? {
        try loadNetrcWithWarning(environment: environment).netrc
    }

    /// The `.netrc` to use, and a warning when its passwords are readable by other users (it is used
    /// all the same, as curl does; `chmod 600` fixes it).
    package func loadNetrcWithWarning(environment: [String: String]) throws(UsageError) -> (
        netrc: Netrc?, warning: String?
    ) {
        let path: String
        if let netrcFile {
            guard FileManager.default.isReadableFile(atPath: netrcFile) else {
                throw UsageError(message: "error: --netrc-file: cannot read '\(netrcFile)'")
            }
            path = netrcFile
        } else {
            guard let home = environment["HOME"], !home.isEmpty else { return (nil, nil) }
            path = home + "/.netrc"
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            if netrcFile != nil { throw UsageError(message: "error: --netrc-file: cannot read '\(path)'") }
            return (nil, nil)
        }
        let netrc = Netrc(parsing: String(decoding: data, as: UTF8.self))
        var info = stat()
        let exposed =
            stat(path, &info) == 0 && info.st_mode & 0o077 != 0
            && netrc.entries.contains { $0.password != nil }
        let warning =
            exposed
            ? "warning: \(path) holds passwords and other users can read it; chmod 600 '\(path)'" : nil
        return (netrc, warning)
    }

    /// A URL as the command line accepts it: http or https, with a host.
    ///
    /// - Throws: ``UsageError`` saying what is wrong with `text`.
    package static func url(from text: String) throws(UsageError) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else {
            throw UsageError(message: "error: '\(text)' is not a valid URL (expected http://… or https://…)")
        }
        guard scheme == "http" || scheme == "https" else {
            throw UsageError(
                message:
                    "error: unsupported scheme '\(scheme)' in '\(url.redactedForDisplay)' (use http or https)"
            )
        }
        guard let host = url.host(), !host.isEmpty else {
            throw UsageError(
                message:
                    "error: '\(url.redactedForDisplay)' is not a valid URL (expected http://… or https://…)")
        }
        return url
    }

    /// `url` without its `user:password@`, and those credentials (percent-decoded).
    package static func splitCredentials(_ url: URL) -> (URL, Credentials?) {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let user = components.user
        else { return (url, nil) }
        let password = components.password ?? ""
        components.user = nil
        components.password = nil
        return (components.url ?? url, Credentials(user: user, password: password))
    }
}
