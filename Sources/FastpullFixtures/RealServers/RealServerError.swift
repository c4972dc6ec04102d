/// Why a real server (nginx, squid, moto, ...) could not be started or used: a one-line summary and, when
/// there is one, what the server itself printed (its error log, standard error).
public struct RealServerError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, e.g. "nginx did not accept connections on 127.0.0.1:40123 within 10 s".
    public var message: String
    /// The tail of the server's own logs, when they say why.
    public var serverOutput: String

    /// An error with `message` and, optionally, the server's own words.
    public init(_ message: String, serverOutput: String = "") {
        self.message = message
        self.serverOutput = serverOutput
    }

    /// The message followed by the server's output, indented.
    public var description: String {
        guard !serverOutput.isEmpty else { return message }
        let indented = serverOutput.split(separator: "\n", omittingEmptySubsequences: false)
            .map { "    " + $0 }.joined(separator: "\n")
        return message + "\n" + indented
    }
}
