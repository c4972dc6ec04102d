import Fastpull
import FastpullCommandLine
import FoundationEssentials
import Glibc

#if canImport(Glibc)
    import Glibc
#endif

/// `fastpull [OPTIONS] URL...`: parses options, runs the downloads with a progress display, prints a
/// summary or one-line errors (and `--json` events), and exits with the documented code.
@main
struct FastpullCommand {
    static func main() async {
        SignalWatcher.unblockStopSignals()
        StandardStream.ignoreBrokenPipes()
        let started = ContinuousClock.now
        let environment = ProcessInfo.processInfo.environment
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let command = arguments.first, ListCommands.names.contains(command) {
            await ListCommands.run(command, Array(arguments.dropFirst()), environment: environment)
        }
        if let daemon = DaemonOptions.invocation(executable: CommandLine.arguments[0], arguments: arguments) {
            ProcessArguments.hide(DaemonOptions.secretSpans(in: arguments), of: arguments)
            await DaemonCommand.run(daemon, asAria2c: arguments.first != "daemon", environment: environment)
        }
        // Copied: the passwords among them leave the process table now, not when the download ends.
        ProcessArguments.hide(ArgumentSecrets.spans(in: arguments), of: arguments)
        var options: CommandOptions
        let lines: [BatchFile.Line]
        let netrc: Netrc?
        do {
            let configured = try ConfigFile.merged(
                try OptionAliases.rewrite(arguments), environment: environment,
                read: { path in
                    FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
                })
            let parsed = try ArgumentParser.parse(configured)
            if parsed.has("help") {
                print(HelpText.text(width: Terminal.columns(of: STDOUT_FILENO) ?? HelpText.defaultWidth))
                exit(0)
            }
            if parsed.has("man") {
                print(ManPage.text, terminator: "")
                exit(0)
            }
            if let shell = parsed.last("completions") {
                guard let script = ShellCompletions.script(for: shell) else {
                    printError(
                        "error: --completions: expected one of \(ShellCompletions.shells.joined(separator: ", ")), got '\(shell)'"
                    )
                    exit(ExitStatus.usage)
                }
                print(script, terminator: "")
                exit(0)
            }
            if parsed.has("version") {
                print("fastpull \(fastpullVersion)")
                exit(0)
            }
            options = try CommandOptions(parsed)
            // `-i -` is read as it comes, while the files download (``StreamedInput``).
            lines = options.readsInputAsItComes ? [] : try readInputFile(options.inputFile)
            let loaded = try options.loadNetrcWithWarning(environment: environment)
            netrc = loaded.netrc
            if let warning = loaded.warning, !options.quiet { printError(warning) }
        } catch {
            printError(error.message)
            exit(ExitStatus.usage)
        }

        let metalinks: [CommandOptions.MetalinkFile]
        do {
            let proxy: @Sendable (URL) throws(UsageError) -> ProxySetting = {
                [options] url throws(UsageError) in
                try options.proxySetting(for: url, environment: environment)
            }
            options.configuration.integrity.checksumFiles = try await ChecksumFileLoader.load(
                options.checksumFiles, using: options.configuration, proxy: proxy)
            metalinks = try await MetalinkLoader.load(
                options.metalinks, using: options.configuration, proxy: proxy)
        } catch {
            printError("error: \(error.commandLineMessage)")
            exit(error.code.rawValue)
        }
        let jobs: [CommandOptions.Job]
        do {
            jobs = try options.jobs(
                lines: lines, metalinks: metalinks, netrc: netrc, environment: environment,
                workingDirectory: FileManager.default.currentDirectoryPath)
        } catch {
            printError(error.message)
            exit(ExitStatus.usage)
        }
        guard !jobs.isEmpty || options.readsInputAsItComes else {
            printError("error: \(options.inputFile ?? "the input file") lists no URL")
            exit(ExitStatus.usage)
        }
        if options.dryRun {
            exit(await DryRun(jobs: jobs, options: options, started: started).run())
        }
        let streamed =
            options.readsInputAsItComes
            ? options.jobMaker(
                netrc: netrc, environment: environment,
                workingDirectory: FileManager.default.currentDirectoryPath)
            : nil
        exit(
            await Run(
                jobs: jobs, streamed: streamed, options: options, started: started, environment: environment
            )
            .run())
    }

    /// The lines of `-i FILE` (`-` reads standard input).
    static func readInputFile(_ path: String?) throws(UsageError) -> [BatchFile.Line] {
        guard let path else { return [] }
        let data: Data?
        if path == "-" {
            data = StandardStream.readAll(from: STDIN_FILENO)
        } else {
            data = FileManager.default.contents(atPath: path)
        }
        guard let data else { throw UsageError(message: "error: --input-file: cannot read '\(path)'") }
        return try BatchFile.parse(String(decoding: data, as: UTF8.self), source: path)
    }

    /// Prints `fastpull: message` on stderr, its control characters escaped.
    static func printError(_ message: String) {
        StandardStream.write("fastpull: \(message.escapedForTerminal)\n", to: STDERR_FILENO)
    }
}
