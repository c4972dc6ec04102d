import Fastpull
import FoundationEssentials

/// The options scripts reach for: part of a file (`-r`), the largest file (`--max-filesize`), a
/// command for each file as it ends (`--on-download-complete`, `--on-download-error`), a log
/// (`-l`), the response heads (`-D`), and a line after each file (`-w`).
extension CommandOptions {
    /// Reads them from `parsed` (after the rest, `--json` included).
    mutating func readScriptingOptions(_ parsed: ParsedArguments) throws(UsageError) {
        if let text = parsed.last("range") {
            configuration.request.byteRange = try Self.byteRange(text)
        }
        if let text = parsed.last("max-filesize") {
            guard let size = ByteSize.parse(text), size > 0 else {
                throw UsageError(option: "max-filesize", "expected a size like 500M or 2GiB", got: text)
            }
            configuration.integrity.maximumSize = size
        }
        for option in ["on-download-complete", "on-download-error"] {
            guard let command = parsed.last(option) else { continue }
            guard !command.allSatisfy(\.isWhitespace) else {
                throw UsageError(option: option, "expected a command", got: command)
            }
            if option == "on-download-complete" { onComplete = command } else { onError = command }
        }
        if let path = parsed.last("log") {
            guard !path.isEmpty, path != "-" else {
                throw UsageError(option: "log", "expected a file path", got: path)
            }
            logFile = path
        }
        if let path = parsed.last("dump-header") {
            guard !path.isEmpty else {
                throw UsageError(option: "dump-header", "expected a file path", got: path)
            }
            if path == "-", json || output == Self.standardOutputPath {
                throw UsageError(
                    message:
                        "error: --dump-header -: \(json ? "--json" : "--output -") writes to standard output too; give a file"
                )
            }
            dumpHeader = path
            // The heads are the exchanges `-v` prints: the library reports them.
            configuration.diagnostics.verbose = true
        }
        if var format = parsed.last("write-out") {
            if json {
                throw UsageError(
                    message: "error: --json and --write-out: both write to standard output; drop one of them")
            }
            if format.hasPrefix("@") {
                let path = String(format.dropFirst())
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw UsageError(message: "error: --write-out: cannot read '\(path)'")
                }
                format = String(decoding: data, as: UTF8.self)
            }
            writeOut = try WriteOut(format)
        }
    }
}
