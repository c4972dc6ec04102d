import FastpullNet
import Glibc

/// A shared, writable `mmap` of a whole preallocated ``OutputFile``, that connections receive into
/// at their own offsets: the bytes go from the socket (or from TLS's decryption) straight into the
/// file's pages, with no copy through a buffer of the connection's and no lock. `pwrite` and
/// `splice` take the file's inode lock for every write, so connections writing one file wait for
/// each other in the kernel (one core's worth of copying, whatever the count); pages of a mapping
/// are written by every connection at once.
///
/// Each range is faulted in (`MADV_POPULATE_WRITE`) before bytes are received into it: in one call
/// rather than a trap per page, and so that a page the file system cannot give (a full tmpfs, a
/// quota) fails that call with an error instead of raising `SIGBUS` in the middle of a copy. Where
/// it fails, the caller writes those bytes with `pwrite`, which reports the error the user can read.
///
/// The file must keep its length while mapped (a preallocated file of a download that is fetching
/// segments); the mapping is removed when this goes.
package final class WritableMapping: @unchecked Sendable {
    // @unchecked: the pointer is written at disjoint offsets by the connections that claimed them;
    // nothing else is mutable.
    private let base: UnsafeMutableRawPointer
    /// The file's length, and the mapping's.
    let size: Int64

    /// `MADV_POPULATE_WRITE` (Linux 5.14), which Glibc's headers may not name yet.
    private static let populateWrite: Int32 = 23

    /// Maps the `size` bytes of the file behind `descriptor` for writing; nil where the system
    /// refuses (the caller splices or writes instead).
    init?(descriptor: Int32, size: Int64) {
        guard size > 0, let length = Int(exactly: size),
            let pointer = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0),
            pointer != MAP_FAILED
        else { return nil }
        base = pointer
        self.size = size
    }

    deinit { munmap(base, Int(size)) }

    /// Faults in the pages of `range` for writing; false when the system cannot (the file system has
    /// no room for them, or the kernel predates `MADV_POPULATE_WRITE`).
    func populate(_ range: Range<Int64>) -> Bool {
        let page = MappedRegion.pageSize
        let start = range.lowerBound - range.lowerBound % page
        let result = SystemCall.restarting {
            madvise(base + Int(start), Int(range.upperBound - start), Self.populateWrite)
        }
        return result == 0
    }

    /// Receives up to `count` bytes from `transport` into the file at `offset` (a range populated
    /// already); returns how many, 0 at end of stream.
    func receive(from transport: any Transport, count: Int, at offset: Int64) throws -> Int {
        precondition(offset >= 0 && offset + Int64(count) <= size, "a receive outside the mapped file")
        return try transport.read(
            into: UnsafeMutableRawBufferPointer(start: base + Int(offset), count: count))
    }
}
