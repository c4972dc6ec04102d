import FastpullCommandLine
import Glibc

/// The process's own argument memory: what `/proc/PID/cmdline` and `ps` show every user.
enum ProcessArguments {
    /// Overwrites each password of ``ArgumentSecrets/spans(in:)`` with `*` in the real argument
    /// strings (`CommandLine.unsafeArgv`), after the command has copied its arguments: from then on
    /// `-u alice:S3cretPW` shows as `-u alice:********`. The arguments `spans` were found in must be
    /// those of this process (without the program name).
    static func hide(_ spans: [ArgumentSecrets.Span], of arguments: [String]) {
        let argv = CommandLine.unsafeArgv
        for span in spans where span.argument + 1 < Int(CommandLine.argc) {
            guard let string = argv[span.argument + 1] else { continue }
            let length = strlen(string)
            // An argument that is not valid UTF-8 was repaired when it was copied, and its offsets
            // moved: everything from the password's start is hidden then.
            let end = length == arguments[span.argument].utf8.count ? span.bytes.upperBound : length
            guard span.bytes.lowerBound < end, end <= length else { continue }
            for offset in span.bytes.lowerBound..<end { string[offset] = CChar(UInt8(ascii: "*")) }
        }
    }
}
