import Fastpull
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `fastpull [OPTIONS] URL`: parses options, runs the download with a progress line, prints a summary
/// or a one-line error, and exits with the documented code.
@main
struct FastpullCommand {
    static func main() async {
        SignalWatcher.unblockStopSignals()
        let arguments = Array(CommandLine.arguments.dropFirst())
        let options: CommandOptions
        do {
            let parsed = try ArgumentParser.parse(arguments)
            if parsed.has("help") {
                print(HelpText.text)
                exit(0)
            }
            if parsed.has("version") {
                print("fastpull \(fastpullVersion)")
                exit(0)
            }
            options = try CommandOptions(parsed)
        } catch {
            printError(error.message)
            exit(FastpullError.Code.usage.rawValue)
        }
        exit(await run(options))
    }

    static func run(_ options: CommandOptions) async -> Int32 {
        var configuration = options.configuration
        do {
            configuration.checksumFiles = try await ChecksumFileLoader.load(
                options.checksumFiles, using: configuration)
        } catch {
            printError("error: \(error.message)")
            return error.code.rawValue
        }
        let destination = URL(fileURLWithPath: options.output)
        let download = Download(from: options.url, to: destination, configuration: configuration)
        if options.configuration.insecure && !options.quiet {
            printError("warning: --insecure: TLS certificates are not verified")
        }
        let quiet = options.quiet
        let notes = Task {
            for await event in download.events where !quiet {
                let text = describe(event)
                guard !text.isEmpty else { continue }
                if isatty(STDERR_FILENO) == 1 { ProgressView.clear() }
                printError(text)
            }
        }
        defer { notes.cancel() }
        let task = Task { try await download.run() }
        let signals = SignalWatcher { task.cancel() }
        defer { signals.stop() }

        let interactive = !options.quiet && isatty(STDERR_FILENO) == 1
        let progress =
            interactive ? Task { await ProgressView(download: download, width: terminalWidth()).run() } : nil

        let result = await task.result
        progress?.cancel()
        _ = await progress?.value
        if interactive { ProgressView.clear() }

        switch result {
        case .success(let report):
            if !options.quiet { printError(summary(report)) }
            return 0
        case .failure(let error as FastpullError):
            printError("error: \(error.message)")
            return error.code.rawValue
        case .failure(let error):
            printError("error: \(error) (this is a bug; please report it)")
            return FastpullError.Code.internalError.rawValue
        }
    }

    static func describe(_ event: Event) -> String {
        switch event {
        case .resumed(let kept, let total):
            return "resuming: \(ByteFormat.size(kept)) of \(ByteFormat.size(total)) already downloaded"
        case .restarting(let reason):
            return "starting over: \(reason)"
        case .warning(let text):
            return "warning: \(text)"
        case .retry, .steal, .connections:
            return ""
        }
    }

    /// `saved x.iso (1.0 GiB) in 0.85s, 1.2 GiB/s, 8 connections, sha256 …, md5 … (checksum verified:
    /// sha256 from --checksum, md5 from x-goog-hash header, 0.004s after the last byte)`.
    static func summary(_ report: Report) -> String {
        var digests = "sha256 \(report.sha256)"
        for (name, hex) in report.digests.sorted(by: { $0.key < $1.key }) where name != "sha256" {
            digests += ", \(name) \(hex)"
        }
        var verified: [String] = []
        for check in report.checks {
            if case .matched = check.verdict, let expected = check.expected {
                verified.append("\(expected.algorithm) from \(check.source)")
            }
        }
        let verification =
            verified.isEmpty
            ? ""
            : " (checksum verified: \(verified.joined(separator: ", ")), "
                + "\(String(format: "%.3f", report.hashTailSeconds))s after the last byte)"
        let resumed = report.resumedBytes > 0 ? ", resumed after \(ByteFormat.size(report.resumedBytes))" : ""
        return "saved \(report.outputPath) (\(ByteFormat.size(report.size))) in "
            + "\(String(format: "%.2f", report.seconds))s, \(ByteFormat.speed(report.bytesPerSecond)), "
            + "\(report.connections) connection\(report.connections == 1 ? "" : "s"), "
            + "\(digests)\(verification)\(resumed)"
    }

    static func printError(_ message: String) {
        FileHandle.standardError.write(Data("fastpull: \(message)\n".utf8))
    }

    static func terminalWidth() -> Int {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 80
    }
}
