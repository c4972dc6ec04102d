import Glibc

/// The CPU time this process has used, for the connection controller's reading of whether the CPU is
/// the limit (the engine's `ConnectionController.Settings.busyCPU`).
package enum ProcessCPU {
    /// User and system seconds of every thread of the process so far.
    package static var seconds: Double {
        var usage = rusage()
        guard getrusage(Int32(RUSAGE_SELF.rawValue), &usage) == 0 else { return 0 }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}
