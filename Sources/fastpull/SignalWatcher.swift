import Fastpull
import FastpullNet
import FoundationEssentials
import Glibc
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Turns SIGINT, SIGTERM and SIGHUP into a call of `onSignal` (which cancels the download) instead of killing
/// the process, so connections close and the error path runs. A second signal exits at once.
///
/// A real handler (`sigaction`) writes the signal's number into a pipe, and a thread of the watcher's
/// own reads it. Whichever thread the kernel delivers the signal to runs the handler, so nothing
/// depends on threads' masks or on a disposition inherited from the parent (a shell's background job
/// starts with SIGINT ignored): a Ctrl-C is never lost, even on a busy machine.
final class SignalWatcher: Sendable {
    /// The pipe's write end, for the handler (which can capture nothing).
    nonisolated(unsafe) private static var pipeWrite: Int32 = -1
    private let stopped = Atomic<Bool>(false)

    init(onSignal: @escaping @Sendable () -> Void) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let readEnd = ends[0]
        Self.pipeWrite = ends[1]
        OSThread.detach { [self] in
            var seen = false
            while true {
                var number: UInt8 = 0
                let count = read(readEnd, &number, 1)
                if count < 0 && errno == EINTR { continue }
                guard count == 1 else { return }
                if self.stopped.load(ordering: .acquiring) {
                    // The run is over: a late signal ends the process the way it normally would.
                    exit(128 + Int32(number))
                }
                if seen { exit(130) }
                seen = true
                onSignal()
            }
        }
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { number in
            var byte = UInt8(truncatingIfNeeded: number)
            _ = write(SignalWatcher.pipeWrite, &byte, 1)
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = Int32(SA_RESTART)
        for signal in Self.stopSignals { sigaction(signal, &action, nil) }
    }

    /// The signals that stop a download, saving its journal: Ctrl-C, `kill`, and a closed terminal.
    static let stopSignals = [SIGINT, SIGTERM, SIGHUP]

    /// Unblocks the stop signals for this thread and the threads it starts: a parent may have started
    /// us with them blocked (Foundation's `Process` does, from some threads), and then Ctrl-C would do
    /// nothing. Call first thing in `main`.
    static func unblockStopSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in stopSignals { sigaddset(&set, signal) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// The run is over: a signal from now on exits the process at once.
    func stop() {
        stopped.store(true, ordering: .releasing)
    }
}
