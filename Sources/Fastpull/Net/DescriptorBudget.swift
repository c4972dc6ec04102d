import Foundation
import Glibc

/// How many more connections this process can open before it runs out of file descriptors
/// (`ulimit -n`): each needs a socket and, on plain HTTP, the two ends of a splice pipe, and the
/// journal needs a few of its own now and then.
enum DescriptorBudget {
    /// Descriptors one connection may hold: its socket and its splice pipe.
    static let perConnection = 3
    /// Descriptors left free for the journal, the hasher and the caller.
    static let reserve = 16

    /// The process's limit on open files (the soft `RLIMIT_NOFILE`), or nil when it has none.
    static var limit: Int? {
        var value = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &value) == 0, value.rlim_cur != rlim_t.max else {
            return nil
        }
        return Int(clamping: value.rlim_cur)
    }

    /// Descriptors open in this process now (the entries of `/proc/self/fd`), or nil when unknown.
    static var open: Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")).map(\.count)
    }

    /// The most connections that fit in what is left, or nil when there is no limit to speak of.
    static func connections() -> Int? {
        guard let limit, let open else { return nil }
        return max(1, (limit - open - reserve) / perConnection)
    }
}
