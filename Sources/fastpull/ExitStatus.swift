import Fastpull
import FastpullCommandLine

/// The process's exit code: 0 when every file is in place, else the first failed file's code (in the
/// order the files were given), 130 whenever the run was interrupted by a signal, and 3 (a timeout)
/// when `--max-time` stopped it. The table is in `--help` and the README (``ExitCodeTable``).
enum ExitStatus {
    /// The exit code for a run's outcomes.
    static func code(_ outcomes: [BatchOutcome], interrupted: Bool, expired: Bool = false) -> Int32 {
        if expired { return FastpullError.Code.network.rawValue }
        if interrupted { return FastpullError.Code.interrupted.rawValue }
        return outcomes.lazy.compactMap(\.error).first?.code.rawValue ?? 0
    }

    /// The exit code of a usage error.
    static let usage = FastpullError.Code.usage.rawValue
}
