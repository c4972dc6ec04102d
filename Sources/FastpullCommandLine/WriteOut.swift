import Fastpull
import FoundationEssentials

/// `-w`/`--write-out FORMAT`: a line a script reads after each file, with curl's variables
/// (`%{http_code}`, `%{size_download}`, `%{url_effective}`, `%{filename_effective}`,
/// `%{time_total}`, `%{speed_download}`, …) and escapes (`\n`, `\t`, `\r`, `\\`, `%%`).
package struct WriteOut: Sendable, Equatable {
    /// One piece of a format.
    enum Piece: Sendable, Equatable {
        case text(String)
        case variable(String)
    }

    /// The variables known, as curl names them.
    package static let variables = [
        "http_code", "response_code", "size_download", "url_effective", "url", "filename_effective",
        "time_total", "speed_download", "num_connects", "exitcode", "errormsg",
    ]

    let pieces: [Piece]

    /// The format `text` (curl's `@FILE` is read by the caller).
    ///
    /// - Throws: ``UsageError`` for an unknown variable or one not closed.
    package init(_ text: String) throws(UsageError) {
        var pieces: [Piece] = []
        var literal = ""
        var rest = Substring(text)
        while let character = rest.first {
            rest = rest.dropFirst()
            switch character {
            case "\\":
                guard let next = rest.first else {
                    literal.append("\\")
                    continue
                }
                rest = rest.dropFirst()
                switch next {
                case "n": literal.append("\n")
                case "t": literal.append("\t")
                case "r": literal.append("\r")
                case "\\": literal.append("\\")
                default: literal += "\\\(next)"
                }
            case "%" where rest.first == "%":
                rest = rest.dropFirst()
                literal.append("%")
            case "%" where rest.first == "{":
                guard let close = rest.firstIndex(of: "}") else {
                    throw UsageError(option: "write-out", "a %{ is not closed", got: text)
                }
                let name = String(rest[rest.index(after: rest.startIndex)..<close])
                guard Self.variables.contains(name) else {
                    throw UsageError(
                        message:
                            "error: --write-out: unknown variable '%{\(name)}' (known: \(Self.variables.map { "%{\($0)}" }.joined(separator: ", ")))"
                    )
                }
                if !literal.isEmpty { pieces.append(.text(literal)) }
                literal = ""
                pieces.append(.variable(name))
                rest = rest[rest.index(after: close)...]
            default:
                literal.append(character)
            }
        }
        if !literal.isEmpty { pieces.append(.text(literal)) }
        self.pieces = pieces
    }

    /// What one file's outcome gives the variables.
    package struct Values: Sendable {
        /// The final answer's status: 200 for a file saved (206 for a part, `--range`), the error's
        /// status for a failure, 0 when no answer came.
        package var httpCode: Int
        /// Body bytes received in this run.
        package var sizeDownload: Int64
        /// The URL that answered last.
        package var urlEffective: String
        /// The URL asked for.
        package var url: String
        /// The output path.
        package var filenameEffective: String
        /// Seconds the file took.
        package var timeTotal: Double
        /// The connections that fetched it at most at once.
        package var connections: Int
        /// The file's exit code.
        package var exitCode: Int32
        /// The error's message, empty on success.
        package var errorMessage: String

        /// The values of `outcome`, a file of a run that fetched parts when `ranged`.
        package init(_ outcome: BatchOutcome, ranged: Bool, plannedPath: String?) {
            switch outcome.result {
            case .success(let report):
                httpCode = ranged ? 206 : 200
                sizeDownload = report.bytesFetched
                urlEffective = report.finalURL.absoluteString
                filenameEffective = report.outputPath
                timeTotal = report.seconds
                connections = report.connections
                exitCode = 0
                errorMessage = ""
            case .failure(let error):
                httpCode = error.httpStatus ?? 0
                sizeDownload = 0
                urlEffective = (error.url ?? outcome.item.url).absoluteString
                filenameEffective = plannedPath ?? ""
                timeTotal = 0
                connections = 0
                exitCode = error.code.rawValue
                errorMessage = error.message
            }
            url = outcome.item.url.absoluteString
        }
    }

    /// The format with `values` in place.
    package func render(_ values: Values) -> String {
        var output = ""
        for piece in pieces {
            switch piece {
            case .text(let text):
                output += text
            case .variable(let name):
                output += Self.value(name, values)
            }
        }
        return output
    }

    private static func value(_ name: String, _ values: Values) -> String {
        switch name {
        case "http_code", "response_code":
            let digits = String(values.httpCode)
            return String(repeating: "0", count: max(0, 3 - digits.count)) + digits
        case "size_download": return "\(values.sizeDownload)"
        case "url_effective": return values.urlEffective
        case "url": return values.url
        case "filename_effective": return values.filenameEffective
        case "time_total": return seconds(values.timeTotal)
        case "speed_download":
            return values.timeTotal > 0 ? "\(Int64(Double(values.sizeDownload) / values.timeTotal))" : "0"
        case "num_connects": return "\(values.connections)"
        case "exitcode": return "\(values.exitCode)"
        case "errormsg": return values.errorMessage
        default: return ""
        }
    }

    /// Seconds with six decimals, as curl writes them.
    private static func seconds(_ value: Double) -> String {
        let micros = Int64((max(0, value) * 1_000_000).rounded())
        let fraction = String(micros % 1_000_000)
        return "\(micros / 1_000_000)." + String(repeating: "0", count: 6 - fraction.count) + fraction
    }
}
