import Glibc

/// A failed file-system call: which call, on which path, and the errno it returned.
package struct StorageError: Error, Sendable, Equatable, CustomStringConvertible {
    var call: String
    var path: String
    var errno: Int32

    package var description: String {
        "\(call) \(path): \(String(cString: strerror(errno)))"
    }

    /// True when the disk (or quota) is full.
    var isNoSpace: Bool { errno == ENOSPC || errno == EDQUOT }

    /// True when the process (or the system) has no file descriptor left.
    var isOutOfDescriptors: Bool { errno == EMFILE || errno == ENFILE }
}

/// Why a verified file could not take its name.
package enum PlacementError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Something appeared at the name during the download, and replacing it was not allowed.
    case appeared(String)
    /// The name holds a device, FIFO, socket or folder, which is never replaced.
    case notAFile(String)
    /// The download's own `.part` (this path) no longer names the file it wrote: another program
    /// replaced or removed it during the download.
    case replaced(String)
    /// The name is a file another download is writing (it holds the file's lock): never replaced.
    case inUse(String)

    package var description: String {
        switch self {
        case .appeared(let path):
            return "\(path) appeared during the download and was left alone"
        case .notAFile(let path):
            return "\(path) is not a regular file and is never replaced"
        case .replaced(let path):
            return "\(path) was replaced or removed by another program during the download"
        case .inUse(let path):
            return "\(path) is being written by another download and is never replaced"
        }
    }
}

/// The file system lacks room for a download before any byte of it is fetched.
package struct SpaceError: Error, Sendable, Equatable {
    /// The folder the file goes into.
    var folder: String
    /// Bytes the file needs beyond what it holds already.
    var needed: Int64
    /// Bytes free for this user.
    var free: Int64
}
