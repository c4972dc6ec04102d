import FastpullNet
import FoundationEssentials
import Glibc

/// Why the `.part` file of a download could not be claimed.
package enum ClaimError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Another open file (this process's or another's) holds the lock: a second download writes there.
    case busy(path: String, holder: Int32?)
    /// Something other than a regular file is at the path.
    case notRegular(path: String)
    /// The file has other names (hard links): writing would change what those name too.
    case linked(path: String, links: Int)
    /// A file-system call failed.
    case io(StorageError)

    package var description: String {
        switch self {
        case .io(let error):
            return error.description
        case .busy(let path, let holder):
            let who = holder.map { "another download (process \($0))" } ?? "another download"
            return
                "\(who) is writing \(path); wait for it to finish or stop it, or choose another output path"
        case .notRegular(let path):
            return "\(path) is not a regular file; remove it or choose another output path"
        case .linked(let path, let links):
            return
                "\(path) has \(links) names (hard links), so writing it would change another file too; remove it or choose another output path"
        }
    }
}

extension OutputFile {
    /// Opens the `.part` file at `path` for one download and locks it for as long as this object
    /// lives: creates it when missing, keeps what is there (the caller decides whether to resume or
    /// truncate), refuses a symlink, anything but a regular file, and a file with other hard links.
    ///
    /// The lock is an exclusive `flock` on the open file, which conflicts with every other open file
    /// of the inode, in this process or another: a second download to the same output fails here at
    /// once, naming the process that holds it. After locking, the path must still name the locked
    /// inode (a holder may have removed it just before finishing); otherwise the claim starts again.
    convenience init(claiming path: String) throws(ClaimError) {
        var attempts = 0
        while true {
            attempts += 1
            // A new file is created exclusively; an existing one is opened as it is, without waiting
            // (O_NONBLOCK: a FIFO there would make open(2) wait for a writer).
            let (fd, created) = Self.openCreating(
                path, flags: O_RDWR | O_NOFOLLOW | O_CLOEXEC, existing: O_NONBLOCK)
            guard fd >= 0 else {
                let code = errno
                if code == ELOOP || code == ENXIO || code == EISDIR { throw .notRegular(path: path) }
                throw .io(StorageError(call: "open", path: path, errno: code))
            }
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                let code = errno
                Glibc.close(fd)
                throw .io(StorageError(call: "fstat", path: path, errno: code))
            }
            guard (info.st_mode & S_IFMT) == S_IFREG else {
                Glibc.close(fd)
                throw .notRegular(path: path)
            }
            var result: Int32
            result = SystemCall.restarting { flock(fd, LOCK_EX | LOCK_NB) }
            guard result == 0 else {
                let code = errno
                Glibc.close(fd)
                guard code == EWOULDBLOCK else {
                    throw .io(StorageError(call: "flock", path: path, errno: code))
                }
                throw .busy(path: path, holder: Self.lockHolder(device: info.st_dev, inode: info.st_ino))
            }
            // The path must still be this inode: a holder that removed it just before letting go leaves
            // us a lock on a file nobody will see.
            var current = stat()
            guard lstat(path, &current) == 0, current.st_dev == info.st_dev, current.st_ino == info.st_ino
            else {
                Glibc.close(fd)
                guard attempts < 20 else { throw .busy(path: path, holder: nil) }
                continue
            }
            guard current.st_nlink <= 1 else {
                Glibc.close(fd)
                throw .linked(path: path, links: Int(current.st_nlink))
            }
            // Back to blocking writes; O_NONBLOCK only kept open(2) from waiting on a FIFO.
            if !created { _ = fcntl(fd, F_SETFL, O_RDWR) }
            // Empty only as seen now, locked: a file created here may have been written by another
            // claimant before the lock was ours.
            self.init(path: path, descriptor: fd, created: created, empty: current.st_size == 0)
            return
        }
    }

    /// The process holding a `flock` on the inode, from `/proc/locks`; nil when it cannot be told. The
    /// kernel lists the locks a page at a time, so a line can be skipped while other locks come and
    /// go: a listing without the holder is read again, a few times. The file is read to its end with
    /// `read(2)` (it reports a size of 0, and a reader that trusts the size gets only its first page,
    /// which on a busy machine does not hold the line).
    static func lockHolder(device: dev_t, inode: ino_t) -> Int32? {
        for _ in 0..<5 {
            if let holder = lockHolderOnce(device: device, inode: inode) { return holder }
        }
        return nil
    }

    private static func lockHolderOnce(device: dev_t, inode: ino_t) -> Int32? {
        guard let text = Self.readToEnd("/proc/locks") else { return nil }
        let major = (UInt64(device) >> 8) & 0xfff | (UInt64(device) >> 32) & ~0xfff
        let minor = UInt64(device) & 0xff | (UInt64(device) >> 12) & ~0xff
        for line in text.split(separator: "\n") {
            // "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF"
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK", let pid = Int32(fields[4]) else { continue }
            let parts = fields[5].split(separator: ":")
            guard parts.count == 3, UInt64(parts[0], radix: 16) == major,
                UInt64(parts[1], radix: 16) == minor,
                UInt64(parts[2]) == UInt64(inode)
            else { continue }
            return pid
        }
        return nil
    }

    /// The whole text of a file read with `read(2)` until its end (for `/proc` files, whose size says 0).
    static func readToEnd(_ path: String) -> String? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return count == 0 ? String(decoding: bytes, as: UTF8.self) : nil }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }
}
