import CLinux
import FastpullNet
import Glibc
import Synchronization

/// The `.part` file a download writes into: created without following symlinks, preallocated, written
/// with positioned writes from every connection at once, and renamed into place when verified.
///
/// The descriptor never changes after `init`, `pwrite`/`pread` at distinct offsets are safe from many
/// threads, and `close` is only called once all writers are done.
package final class OutputFile: Sendable {
    let path: String
    private let descriptor: Int32
    /// Writers take turns here rather than spinning on the inode lock in the kernel.
    private let writers = WriterLock()

    /// Whether opening the file created it (it was not there before).
    let wasCreated: Bool
    /// False while the file is known to be empty: it was empty when this object took it, or this
    /// object emptied it, and nothing has been written, spliced or sized since.
    private let mayHoldBytes: Atomic<Bool>

    /// Whether ``empty()`` would skip its truncation (the file is known to hold no bytes).
    var isKnownEmpty: Bool { !mayHoldBytes.load(ordering: .relaxed) }
    /// Whether the file system is memory (``isInMemory``): 0 not known yet, 1 no, 2 yes.
    private let memoryBacked = Atomic<UInt8>(0)

    /// Takes over an open descriptor of the file at `path`; `created` tells whether the open made it,
    /// `empty` whether it is known to hold no bytes now (a look after locking it, not the creation
    /// alone: another process may have written it in between).
    init(path: String, descriptor: Int32, created: Bool, empty: Bool) {
        self.path = path
        self.descriptor = descriptor
        self.wasCreated = created
        self.mayHoldBytes = Atomic(!empty)
    }

    /// Creates (or truncates) the file at `path`. Refuses to follow a symlink there.
    init(creatingAt path: String) throws(StorageError) {
        // Truncated, an existing file keeps its extended attributes: not a file this run created.
        let (fd, created) = Self.openCreating(path, flags: O_RDWR | O_NOFOLLOW | O_CLOEXEC, existing: O_TRUNC)
        guard fd >= 0 else { throw StorageError(call: "open", path: path, errno: errno) }
        self.path = path
        self.descriptor = fd
        self.wasCreated = created
        // Created or truncated by the open: empty either way.
        self.mayHoldBytes = Atomic(false)
    }

    /// Opens `path` with `flags`, creating it exclusively (mode 0666 before the umask); where it exists
    /// already, opens that with `flags` and `existing`. Retries on `EINTR`; `fd` is -1 (with `errno`
    /// set) on failure. `created`: whether this call made the file.
    static func openCreating(_ path: String, flags: Int32, existing: Int32 = 0) -> (fd: Int32, created: Bool)
    {
        var fd: Int32
        fd = SystemCall.restarting { open(path, flags | O_CREAT | O_EXCL, 0o666) }
        guard fd < 0 && errno == EEXIST else { return (fd, true) }
        fd = SystemCall.restarting { open(path, flags | existing) }
        return (fd, false)
    }

    /// Opens an existing file to resume into it, without truncating it. Refuses to follow a symlink.
    init(openingExisting path: String) throws(StorageError) {
        var fd: Int32
        fd = SystemCall.restarting { open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else { throw StorageError(call: "open", path: path, errno: errno) }
        self.path = path
        self.descriptor = fd
        self.wasCreated = false
        self.mayHoldBytes = Atomic(true)
    }

    deinit { Glibc.close(descriptor) }

    /// Reserves `size` bytes on disk so that a full disk fails now rather than mid-download. Falls
    /// back to `ftruncate` where the file system cannot preallocate.
    ///
    /// On tmpfs, preallocating means zeroing every page in memory before the download overwrites it
    /// (about 0.1 s per GiB on the critical path), so there the free space is checked instead and the
    /// file only gets its length.
    func preallocate(size: Int64) throws(StorageError) {
        guard size > 0 else { return }
        mayHoldBytes.store(true, ordering: .relaxed)
        if isInMemory {
            let held = try checkFreeSpace(for: size)
            try truncate(to: max(size, held))
            return
        }
        var failure: Int32
        repeat { failure = posix_fallocate(descriptor, 0, off_t(size)) } while failure == EINTR
        if failure == 0 { return }
        guard failure == EOPNOTSUPP || failure == ENOSYS || failure == EINVAL else {
            throw StorageError(call: "posix_fallocate", path: path, errno: failure)
        }
        try truncate(to: size)
    }

    /// Fails with ``SpaceError`` when the file system has no room for a file of `size` bytes (beyond the
    /// blocks this file holds already), before anything is allocated: a size no disk can hold is an
    /// error the user can read, never an allocation that aborts. `empty`: the caller knows the file
    /// holds no blocks (it was just emptied), so its block count is not asked.
    func checkRoom(for size: Int64, empty: Bool = false) throws(SpaceError) {
        guard let volume = fileSystem() else { return }
        // ramfs reports no size at all (f_blocks 0): it has no limit to check.
        guard volume.f_blocks > 0 else { return }
        var held: Int64 = 0
        if !empty {
            var info = stat()
            guard fstat(descriptor, &info) == 0 else { return }
            held = Int64(info.st_blocks) * 512
        }
        let (free, overflow) = Int64(volume.f_bavail).multipliedReportingOverflow(by: Int64(volume.f_frsize))
        guard !overflow, size - held > free else { return }
        throw SpaceError(folder: FileSystem.split(path).folder, needed: size - held, free: free)
    }

    /// Whether the file lives on tmpfs (or ramfs), whose pages are memory: nothing there survives a
    /// restart, so neither the finished file nor its folder is synced there (``sync()``,
    /// ``place(at:replacing:)``). Asked of the system once (or learnt from the room check).
    var isInMemory: Bool {
        switch memoryBacked.load(ordering: .relaxed) {
        case 1: return false
        case 2: return true
        default: return fileSystem().map { Self.isMemoryType($0.f_type) } ?? false
        }
    }

    private static func isMemoryType(_ type: Int) -> Bool {
        type == 0x0102_1994 || type == 0x8584_58f6  // TMPFS_MAGIC, RAMFS_MAGIC
    }

    /// What `fstatfs(2)` says of the file's file system now (its free space), noting its type.
    private func fileSystem() -> statfs? {
        var volume = statfs()
        guard fstatfs(descriptor, &volume) == 0 else { return nil }
        memoryBacked.store(Self.isMemoryType(Int(volume.f_type)) ? 2 : 1, ordering: .relaxed)
        return volume
    }

    /// Fails with `ENOSPC` when the file system lacks room for the bytes of `size` the file does not
    /// hold yet; returns the file's length.
    private func checkFreeSpace(for size: Int64) throws(StorageError) -> Int64 {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw StorageError(call: "fstat", path: path, errno: errno)
        }
        guard let volume = fileSystem() else { return Int64(info.st_size) }
        let held = Int64(info.st_blocks) * 512
        let free = Int64(volume.f_bavail) * Int64(volume.f_frsize)
        // ramfs reports no size at all (f_blocks 0): it has no limit to check.
        guard volume.f_blocks > 0, size - held > free else { return Int64(info.st_size) }
        throw StorageError(call: "posix_fallocate", path: path, errno: ENOSPC)
    }

    /// Sets the file's length.
    func truncate(to size: Int64) throws(StorageError) {
        // Marked before the call: a failed truncation leaves the length unknown.
        mayHoldBytes.store(true, ordering: .relaxed)
        var result: Int32
        result = SystemCall.restarting { ftruncate(descriptor, off_t(size)) }
        guard result == 0 else { throw StorageError(call: "ftruncate", path: path, errno: errno) }
        if size == 0 { mayHoldBytes.store(false, ordering: .relaxed) }
    }

    /// Sets the file's length to 0, without a system call when it is known to be empty (``isKnownEmpty``:
    /// empty when this object took it or emptied it, with nothing written, spliced or sized since).
    func empty() throws(StorageError) {
        guard mayHoldBytes.load(ordering: .relaxed) else { return }
        try truncate(to: 0)
    }

    /// Writes all of `bytes` at `offset`.
    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StorageError) {
        mayHoldBytes.store(true, ordering: .relaxed)
        try writers.withLock { () throws(StorageError) in try writeAll(bytes, at: offset) }
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StorageError) {
        var done = 0
        while done < bytes.count {
            let result = pwrite(
                descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset + Int64(done)))
            if result < 0 {
                if errno == EINTR { continue }
                throw StorageError(call: "pwrite", path: path, errno: errno)
            }
            if result == 0 { throw StorageError(call: "pwrite", path: path, errno: EIO) }
            done += result
        }
    }

    /// Moves exactly `count` bytes out of the pipe `pipe` into the file at `offset` (`splice(2)`). Fails
    /// with `EINVAL` where the file system cannot take spliced data; the bytes then stay in the pipe.
    func splice(fromPipe pipe: Int32, count: Int, at offset: Int64) -> Result<Void, StorageError> {
        mayHoldBytes.store(true, ordering: .relaxed)
        var done = 0
        while done < count {
            var position = CLongLong(offset + Int64(done))
            let result = writers.withLock { fp_splice(pipe, descriptor, &position, count - done) }
            if result < 0 {
                if errno == EINTR { continue }
                return .failure(StorageError(call: "splice", path: path, errno: errno))
            }
            if result == 0 { return .failure(StorageError(call: "splice", path: path, errno: EIO)) }
            done += result
        }
        return .success(())
    }

    /// A writable shared mapping of the file's first `size` bytes, or nil where the file is shorter
    /// (a page past its end raises `SIGBUS` when written) or the system refuses one.
    func mapForWriting(size: Int64) -> WritableMapping? {
        guard let length = try? self.size(), length >= size else { return nil }
        mayHoldBytes.store(true, ordering: .relaxed)
        return WritableMapping(descriptor: descriptor, size: size)
    }

    /// Copies the first `count` bytes of the file at `path` to the start of this one: a partial file
    /// another program left, adopted (``Configuration/Resume/adoptsPartialFile``). In the kernel
    /// where the file systems allow (`copy_file_range(2)`, a clone on some), else through a buffer.
    func copyPrefix(from path: String, count: Int64) throws(StorageError) {
        mayHoldBytes.store(true, ordering: .relaxed)
        let source = SystemCall.restarting { open(path, O_RDONLY | O_CLOEXEC) }
        guard source >= 0 else { throw StorageError(call: "open", path: path, errno: errno) }
        defer { Glibc.close(source) }
        var copied: Int64 = 0
        var inKernel = true
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while copied < count {
            let want = Int(min(count - copied, 1 << 30))
            var result: Int
            if inKernel {
                var from = CLongLong(copied)
                var to = CLongLong(copied)
                result = fp_copy_file_range(source, &from, descriptor, &to, want)
                if result < 0, [EXDEV, ENOSYS, EINVAL, EOPNOTSUPP].contains(errno) {
                    inKernel = false
                    continue
                }
            } else {
                result = buffer.withUnsafeMutableBytes {
                    pread(source, $0.baseAddress!, min($0.count, want), off_t(copied))
                }
                if result > 0 {
                    let count = result
                    let failure = buffer.withUnsafeBytes { bytes -> StorageError? in
                        do throws(StorageError) {
                            try writeAll(UnsafeRawBufferPointer(rebasing: bytes[..<count]), at: copied)
                            return nil
                        } catch {
                            return error
                        }
                    }
                    if let failure { throw failure }
                }
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw StorageError(call: inKernel ? "copy_file_range" : "pread", path: path, errno: errno)
            }
            // The file there got shorter meanwhile.
            if result == 0 { throw StorageError(call: "read", path: path, errno: EIO) }
            copied += Int64(result)
        }
    }

    /// Whether this file begins with every byte of the file at `path` (no longer than this one; an
    /// empty one always), compared a mebibyte at a time through one descriptor.
    func begins(with path: String) -> Bool {
        let other = SystemCall.restarting { open(path, O_RDONLY | O_CLOEXEC) }
        guard other >= 0 else { return false }
        defer { Glibc.close(other) }
        var info = stat()
        guard fstat(other, &info) == 0, let size = try? size(), Int64(info.st_size) <= size else {
            return false
        }
        let length = Int64(info.st_size)
        let chunk = 1 << 20
        var theirs = [UInt8](repeating: 0, count: chunk)
        var ours = [UInt8](repeating: 0, count: chunk)
        var offset: Int64 = 0
        while offset < length {
            let count = Int(min(Int64(chunk), length - offset))
            let got = theirs.withUnsafeMutableBytes { pread(other, $0.baseAddress!, count, off_t(offset)) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { return false }
            let read = ours.withUnsafeMutableBytes {
                (try? self.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[..<got]), at: offset)) ?? 0
            }
            guard read == got, ours[..<got].elementsEqual(theirs[..<got]) else { return false }
            offset += Int64(got)
        }
        return true
    }

    /// Reads up to `buffer.count` bytes at `offset`; returns the count (0 at end of file).
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(StorageError) -> Int {
        while true {
            let result = pread(descriptor, buffer.baseAddress!, buffer.count, off_t(offset))
            if result >= 0 { return result }
            if errno != EINTR { throw StorageError(call: "pread", path: path, errno: errno) }
        }
    }

    /// A read-only mapping of `range`, which must lie within the file's length; nil if the system
    /// refuses to map it.
    func map(_ range: Range<Int64>) -> MappedRegion? {
        MappedRegion(descriptor: descriptor, range: range)
    }

    /// The open file's status flags (`fcntl(F_GETFL)`): the access mode, `O_NONBLOCK`, …
    var statusFlags: Int32 { fcntl(descriptor, F_GETFL) }

    /// The file's current length.
    func size() throws(StorageError) -> Int64 {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw StorageError(call: "fstat", path: path, errno: errno)
        }
        return Int64(info.st_size)
    }

    /// Records where the file came from (``OriginRecord``) on it; best effort.
    /// Sets the file's modification time to `seconds` since 1970 (its access time left alone).
    func setModificationTime(_ seconds: Int64) {
        // UTIME_OMIT ((1 << 30) - 2), which Glibc does not export to Swift: the access time stays.
        var times = [timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2), timespec(tv_sec: Int(seconds), tv_nsec: 0)]
        _ = futimens(descriptor, &times)
    }

    func record(_ origin: OriginRecord) {
        // A file this run created has no attributes of an earlier run's version to remove (the record
        // is the last thing written before the rename, so no attempt of this run left one either).
        origin.write(to: descriptor, fresh: wasCreated)
    }

    /// Flushes data and metadata to stable storage; nothing to do where the file lives in memory.
    func sync() throws(StorageError) {
        guard !isInMemory else { return }
        var result: Int32
        result = SystemCall.restarting { fsync(descriptor) }
        guard result == 0 else { throw StorageError(call: "fsync", path: path, errno: errno) }
    }

    /// Flushes the file's data (not its timestamps) to stable storage: what a journal may then record.
    func datasync() throws(StorageError) {
        var result: Int32
        result = SystemCall.restarting { fdatasync(descriptor) }
        guard result == 0 else { throw StorageError(call: "fdatasync", path: path, errno: errno) }
    }

    /// Renames the file to `destination` and makes the rename durable by syncing the folder (on a disk:
    /// in memory nothing outlasts a restart).
    func rename(to destination: String) throws(StorageError) {
        guard Glibc.rename(path, destination) == 0 else {
            throw StorageError(call: "rename", path: destination, errno: errno)
        }
        if !isInMemory { FileSystem.syncDirectory(containing: destination) }
    }

    /// Moves the file to its name, `destination`, durably (on a disk). With `replacing`, a regular file
    /// or symlink there is replaced (never followed); without it, anything there stays and this fails with
    /// ``PlacementError/appeared(_:)``, atomically (`renameat2` with `RENAME_NOREPLACE`, or a hard link
    /// and unlink where the file system lacks it). Something other than a regular file or a symlink
    /// (a device, a FIFO, a folder) is never replaced.
    ///
    /// The file's path must still name this open file: a `.part` that another program replaced during
    /// the download (another download saved under that very name) would otherwise be moved to the name
    /// with someone else's bytes. A file another download holds its lock on (its `.part`) is never
    /// replaced either.
    func place(at destination: String, replacing: Bool) throws {
        guard isStillAtPath else { throw PlacementError.replaced(path) }
        // The journal of another download's `.part` is that download's too, there or not yet: it
        // rewrites it, and removes it when it finishes.
        if let part = Self.partOfJournal(destination), Self.isLockedByAnother(part) {
            throw PlacementError.inUse(destination)
        }
        if replacing {
            if let taken = Self.refusal(at: destination), case .notAFile = taken { throw taken }
            if Self.isLockedByAnother(destination) { throw PlacementError.inUse(destination) }
            try rename(to: destination)
            return
        }
        // Not replacing, the rename itself refuses a name that is taken: nothing is looked up before
        // (in a folder that many files arrive in at once, every lookup of a name not there waits for
        // the folder's lock).
        var result = fp_rename_noreplace(path, destination)
        if result != 0 && (errno == EINVAL || errno == ENOSYS) {
            // No RENAME_NOREPLACE here: link(2) fails the same way when the name exists.
            result = link(path, destination)
            if result == 0 { _ = unlink(path) }
        }
        guard result == 0 else {
            let code = errno
            if code == EEXIST { throw Self.refusal(at: destination) ?? PlacementError.appeared(destination) }
            throw StorageError(call: "rename", path: destination, errno: code)
        }
        if !isInMemory { FileSystem.syncDirectory(containing: destination) }
    }

    /// Whether the file's path still names this open file (same device and inode).
    var isStillAtPath: Bool {
        var open = stat()
        var named = stat()
        guard fstat(descriptor, &open) == 0 else { return false }
        guard lstat(path, &named) == 0 else { return false }
        return open.st_dev == named.st_dev && open.st_ino == named.st_ino
    }

    /// The `.part` whose journal `path` would be (`x.part.fastpull`, `x.part.fastpull-live` and their
    /// temporary files), or nil.
    static func partOfJournal(_ path: String) -> String? {
        for suffix in [".fastpull", ".fastpull-live", ".fastpull.tmp", ".fastpull-live.tmp"]
        where path.hasSuffix(".part" + suffix) {
            return String(path.dropLast(suffix.utf8.count))
        }
        return nil
    }

    /// Whether a regular file at `path` is locked by another open file description (a download
    /// writing it: every `.part` is held with `flock`).
    package static func isLockedByAnother(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return false }
        // Exclusive: a shared lock someone else holds counts too (a download's claim asks for an
        // exclusive one, which that would refuse).
        return flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK
    }

    /// Why what is at `destination` keeps the file from its name, or nil when nothing is there: it is
    /// not a regular file or a symlink (never replaced), or it is one (replaced only when asked).
    private static func refusal(at destination: String) -> PlacementError? {
        var info = stat()
        guard lstat(destination, &info) == 0 else { return nil }
        let kind = info.st_mode & S_IFMT
        return kind == S_IFREG || kind == S_IFLNK ? .appeared(destination) : .notAFile(destination)
    }
}

/// Small file-system helpers used around the output file.
package enum FileSystem {
    /// The folder holding `path` (`.` for a bare name, `/` at the root) and the name in it, split as
    /// text: no look at the disk.
    package static func split(_ path: String) -> (folder: String, name: Substring) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path[...]) }
        let folder = slash == path.startIndex ? "/" : String(path[..<slash])
        return (folder, path[path.index(after: slash)...])
    }

    /// `name` in `folder`, joined as text (one `/` between them; `name` alone in an empty folder).
    package static func join(_ folder: String, _ name: String) -> String {
        folder.isEmpty ? name : folder.hasSuffix("/") ? folder + name : folder + "/" + name
    }

    /// Removes a file if it exists; errors other than "not there" are reported.
    static func remove(_ path: String) throws(StorageError) {
        guard unlink(path) == 0 || errno == ENOENT else {
            throw StorageError(call: "unlink", path: path, errno: errno)
        }
    }

    /// What ``createEmpty(_:)`` did.
    package enum Creation: Equatable {
        /// The file was made; its device and inode, to know it again.
        case created(device: UInt64, inode: UInt64)
        /// Something is at the path already.
        case taken
        /// It could not be made (`errno`): no room, no permission, a name too long, no such folder.
        case failed(Int32)
    }

    /// Creates an empty file at `path` where nothing is (exclusively, not following a link).
    package static func createEmpty(_ path: String) -> Creation {
        let fd = SystemCall.restarting {
            open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o666)
        }
        guard fd >= 0 else { return errno == EEXIST ? .taken : .failed(errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .created(device: 0, inode: 0) }
        return .created(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Removes the file at `path` if it is still the one ``createEmpty(_:)`` made (`device`, `inode`),
    /// empty, and held by no download.
    package static func removeIfUntouched(_ path: String, device: UInt64, inode: UInt64) {
        var info = stat()
        guard lstat(path, &info) == 0, UInt64(info.st_dev) == device, UInt64(info.st_ino) == inode,
            info.st_size == 0, !OutputFile.isLockedByAnother(path)
        else { return }
        _ = unlink(path)
    }

    /// Whether something (of any kind, including a dangling symlink) exists at `path`.
    package static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// The size of what `path` names (following symbolic links), or nil when nothing is there.
    package static func size(_ path: String) -> Int64? {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : nil
    }

    /// The longest file name the folder at `path` takes, in bytes (`pathconf`'s `NAME_MAX`; 255 when
    /// it cannot be told).
    static func maximumNameLength(in path: String) -> Int {
        let value = pathconf(path, Int32(_PC_NAME_MAX))
        return value > 0 ? value : 255
    }

    /// Whether `path` names this process's standard output (`/dev/stdout`), whatever stdout is.
    package static func isStandardOutput(_ path: String) -> Bool {
        path == "/dev/stdout" || path == "/proc/self/fd/1"
    }

    /// The kind of what `path` names, following symbolic links (`S_IFREG`, `S_IFDIR`, `S_IFIFO`, …), or
    /// nil when nothing is there.
    package static func kind(of path: String) -> mode_t? {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & S_IFMT : nil
    }

    /// Whether `path` is (or a symlink there leads to) a regular file.
    package static func isRegularFile(_ path: String) -> Bool {
        kind(of: path) == S_IFREG
    }

    /// Whether `path` is an existing directory.
    static func isDirectory(_ path: String) -> Bool {
        kind(of: path) == S_IFDIR
    }

    /// The first bytes of the file at `path`, read with `read(2)` until its end or until more than
    /// `limit` are in (then `limit + 1` are returned): a FIFO or a device such as `/dev/zero` is cut
    /// there rather than read whole.
    static func read(_ path: String, atMost limit: Int) throws(StorageError) -> [UInt8] {
        var fd: Int32
        fd = SystemCall.restarting { open(path, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw StorageError(call: "open", path: path, errno: errno) }
        defer { Glibc.close(fd) }
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes {
                Glibc.read(fd, $0.baseAddress! + count, $0.count - count)
            }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw StorageError(call: "read", path: path, errno: errno) }
            if got == 0 { break }
            count += got
        }
        bytes.removeSubrange(count...)
        return bytes
    }

    /// Whether the file at `path` has a hole (a range never written, read as zeros) before `offset`:
    /// `lseek(2)` with `SEEK_HOLE` finds the first one. File systems without holes report none.
    static func hasHoles(_ path: String, before offset: Int64) -> Bool {
        let fd = SystemCall.restarting { open(path, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        // SEEK_HOLE (4), which the Glibc module declares only under _GNU_SOURCE.
        let hole = lseek(fd, 0, 4)
        return hole >= 0 && Int64(hole) < offset
    }

    /// Up to `count` bytes of the file at `path` from `offset` (fewer at its end).
    static func read(_ path: String, at offset: Int64, count: Int) throws(StorageError) -> [UInt8] {
        let fd = SystemCall.restarting { open(path, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw StorageError(call: "open", path: path, errno: errno) }
        defer { Glibc.close(fd) }
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let got = bytes.withUnsafeMutableBytes {
                pread(fd, $0.baseAddress! + done, count - done, off_t(offset + Int64(done)))
            }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw StorageError(call: "pread", path: path, errno: errno) }
            if got == 0 { break }
            done += got
        }
        bytes.removeSubrange(done...)
        return bytes
    }

    /// Best effort: fsync the folder holding `path`, so a rename survives a crash.
    static func syncDirectory(containing path: String) {
        let fd = open(split(path).folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        Glibc.close(fd)
    }
}
