import Fastpull
import Foundation

/// The typed options of one `fastpull` run, validated.
struct CommandOptions {
    var url: URL
    var output: String
    var configuration: Configuration
    var quiet: Bool
    /// `--checksum-file` values, paths or http(s) URLs, read by ``ChecksumFileLoader`` before the download.
    var checksumFiles: [String] = []

    /// Validates parsed arguments; every error names the option and the bad value.
    init(_ parsed: ParsedArguments) throws(UsageError) {
        guard let first = parsed.positionals.first else {
            throw UsageError(
                message: "error: missing URL (usage: fastpull [OPTIONS] URL; see fastpull --help)")
        }
        guard parsed.positionals.count == 1 else {
            throw UsageError(message: "error: expected one URL, got \(parsed.positionals.count)")
        }
        guard let url = URL(string: first), let scheme = url.scheme?.lowercased(),
            let host = url.host(), !host.isEmpty
        else {
            throw UsageError(message: "error: '\(first)' is not a valid URL (expected http://… or https://…)")
        }
        guard scheme == "http" || scheme == "https" else {
            throw UsageError(
                message: "error: unsupported scheme '\(scheme)' in '\(first)' (use http or https)")
        }
        self.url = url
        quiet = parsed.has("quiet")

        var configuration = Configuration()
        if let text = parsed.last("connections") {
            if text == "auto" {
                configuration.connections = .automatic
            } else {
                guard let count = Int(text), (1...128).contains(count) else {
                    throw UsageError(
                        message:
                            "error: --connections: expected a number from 1 to 128 or 'auto', got '\(text)'")
                }
                configuration.connections = .fixed(count)
            }
        }
        if let text = parsed.last("max-connections") {
            guard let count = Int(text), (1...128).contains(count) else {
                throw UsageError(
                    message: "error: --max-connections: expected a number from 1 to 128, got '\(text)'")
            }
            configuration.maximumConnections = count
        }
        if let text = parsed.last("stall-timeout") {
            configuration.stallTimeout = try Self.seconds(text, option: "stall-timeout")
        }
        configuration.traceFile = parsed.last("trace")
        if let text = parsed.last("min-segment") {
            guard let size = SizeParser.parse(text), size > 0 else {
                throw UsageError(
                    message: "error: --min-segment: expected a size like 1M or 512KiB, got '\(text)'")
            }
            configuration.minimumSegmentSize = size
        }
        if let text = parsed.last("retries") {
            guard let count = Int(text), count >= 0 else {
                throw UsageError(message: "error: --retries: expected a number of at least 0, got '\(text)'")
            }
            configuration.retries = count
        }
        if let text = parsed.last("connect-timeout") {
            configuration.connectTimeout = try Self.seconds(text, option: "connect-timeout")
        }
        if let text = parsed.last("timeout") {
            configuration.idleTimeout = try Self.seconds(text, option: "timeout")
        }
        for text in parsed.all("checksum") {
            do {
                configuration.checksums.append(try Checksum(parsing: text))
            } catch {
                throw UsageError(message: "error: --checksum: \(error.message)")
            }
        }
        for source in parsed.all("checksum-file") {
            let readable = FileManager.default.isReadableFile(atPath: source)
            guard ChecksumFileLoader.isURL(source) || readable else {
                throw UsageError(message: "error: --checksum-file: cannot read '\(source)'")
            }
            checksumFiles.append(source)
        }
        configuration.keepPartialOnMismatch = parsed.has("keep-partial")
        if let path = parsed.last("cacert") {
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw UsageError(message: "error: --cacert: cannot read '\(path)'")
            }
            configuration.caFile = path
        }
        configuration.insecure = parsed.has("insecure")
        if parsed.has("restart") && parsed.has("no-restart") {
            throw UsageError(message: "error: --restart and --no-restart cannot be used together")
        }
        configuration.resumeFromJournal = !parsed.has("restart")
        configuration.restartWhenRemoteChanges = !parsed.has("no-restart")
        self.configuration = configuration

        if let path = parsed.last("output") {
            guard !path.isEmpty else { throw UsageError(message: "error: --output: expected a path, got ''") }
            output = path
        } else {
            output = OutputName.derive(from: url)
        }
    }

    private static func seconds(_ text: String, option: String) throws(UsageError) -> Duration {
        guard let value = Double(text), value > 0, value.isFinite else {
            throw UsageError(
                message: "error: --\(option): expected a number of seconds above 0, got '\(text)'")
        }
        return .milliseconds(Int64(value * 1000))
    }
}

/// Parses sizes: `1048576`, `512K`, `1M`, `2G`, `1KiB`, `1MiB`, `1GiB` (all powers of 1024).
enum SizeParser {
    static func parse(_ text: String) -> Int64? {
        let units: [(String, Int64)] = [
            ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("K", 1 << 10), ("M", 1 << 20),
            ("G", 1 << 30),
            ("k", 1 << 10), ("B", 1),
        ]
        for (suffix, multiplier) in units where text.hasSuffix(suffix) {
            guard let number = Int64(text.dropLast(suffix.count)), number >= 0 else { return nil }
            let (product, overflow) = number.multipliedReportingOverflow(by: multiplier)
            return overflow ? nil : product
        }
        return Int64(text)
    }
}

/// The output file name when `-o` is not given: the URL's last path component, decoded and made safe.
enum OutputName {
    static func derive(from url: URL) -> String {
        let last = url.lastPathComponent.removingPercentEncoding ?? url.lastPathComponent
        let safe = String(last.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7f && $0 != "/" })
        if safe.isEmpty || safe == "/" || safe == "." || safe == ".." { return "index.html" }
        return safe.hasPrefix(".") ? "_" + safe.dropFirst() : safe
    }
}
