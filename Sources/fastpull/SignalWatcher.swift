import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Turns SIGINT and SIGTERM into a call of `onSignal` (which cancels the download) instead of killing
/// the process, so connections close and the error path runs. A second signal exits at once.
final class SignalWatcher {
    private let sources: [any DispatchSourceSignal]

    init(onSignal: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "fastpull.signals")
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            nonisolated(unsafe) var seen = false
            source.setEventHandler {
                if seen { exit(130) }
                seen = true
                onSignal()
            }
            source.resume()
            return source
        }
    }

    /// Unblocks SIGINT and SIGTERM for this thread and the threads it starts: a parent may have started
    /// us with them blocked (Foundation's `Process` does, from some threads), and then Ctrl-C would do
    /// nothing. Call first thing in `main`.
    static func unblockStopSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    func stop() {
        for source in sources { source.cancel() }
    }
}
