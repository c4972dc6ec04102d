import Fastpull

/// The command line's words for what the library names by its `Configuration` fields: a remedy names
/// the option to pass, a checksum the user gave is "from --checksum".
extension FastpullError.Remedy {
    /// The remedy as the command line says it: `use --force to replace it`.
    public var commandLineAdvice: String {
        switch self {
        case .resume: return "run the same command to resume"
        case .freeSpace: return "free some space and run the same command again"
        case .replaceExisting: return "use --force to replace it"
        case .startOver: return "run again without --no-restart or -c to start over"
        case .trustAnotherAuthority:
            return "pass --cacert FILE to trust another authority, or --insecure to skip verification"
        case .saveDocumentAsItIs: return "pass --no-follow-metalink to save the document as it is"
        }
    }
}

extension FastpullError {
    /// The message and the remedy in the command line's words, as `fastpull` prints them.
    public var commandLineMessage: String {
        remedy.map { "\(message); \($0.commandLineAdvice)" } ?? message
    }
}

extension Report.ChecksumCheck.Source {
    /// Where the expectation came from, as the command line says it: `--checksum`,
    /// `checksum file SHA256SUMS`, `Repr-Digest header`.
    public var commandLineName: String {
        switch self {
        case .user: return "--checksum"
        case .checksumFile, .header, .document: return description
        }
    }
}
