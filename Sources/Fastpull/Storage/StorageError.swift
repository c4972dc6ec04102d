import Glibc

/// A failed file-system call: which call, on which path, and the errno it returned.
struct StorageError: Error, Sendable, Equatable, CustomStringConvertible {
    var call: String
    var path: String
    var errno: Int32

    var description: String {
        "\(call) \(path): \(String(cString: strerror(errno)))"
    }

    /// True when the disk (or quota) is full.
    var isNoSpace: Bool { errno == ENOSPC || errno == EDQUOT }
}
