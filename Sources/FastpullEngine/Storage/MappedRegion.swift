import Glibc

/// A read-only `mmap` of part of an ``OutputFile``: lets the prefix hasher read bytes that are already
/// in the page cache without copying them into a buffer of its own first.
///
/// The region must lie within the file's current length: a page mapped past the end raises `SIGBUS`
/// when touched. The mapping is removed when the region is released.
package final class MappedRegion {
    /// The file offsets this region covers.
    let range: Range<Int64>
    private let base: UnsafeMutableRawPointer
    private let mappedLength: Int
    /// How far into the mapping `range.lowerBound` lies (the mapping starts on a page boundary).
    private let lead: Int

    static let pageSize = Int64(sysconf(Int32(_SC_PAGESIZE)))

    /// Maps `range` of the file behind `descriptor`; nil when the system refuses (the caller reads
    /// with `pread` instead).
    init?(descriptor: Int32, range: Range<Int64>) {
        guard !range.isEmpty else { return nil }
        let start = range.lowerBound - range.lowerBound % Self.pageSize
        let length = Int(range.upperBound - start)
        guard let pointer = mmap(nil, length, PROT_READ, MAP_SHARED, descriptor, off_t(start)),
            pointer != MAP_FAILED
        else { return nil }
        _ = madvise(pointer, length, MADV_SEQUENTIAL)
        self.range = range
        self.base = pointer
        self.mappedLength = length
        self.lead = Int(range.lowerBound - start)
    }

    deinit { munmap(base, mappedLength) }

    /// The bytes at `offsets`, which must lie within ``range``. Valid while the region lives.
    func bytes(_ offsets: Range<Int64>) -> UnsafeRawBufferPointer {
        precondition(offsets.lowerBound >= range.lowerBound && offsets.upperBound <= range.upperBound)
        let from = lead + Int(offsets.lowerBound - range.lowerBound)
        return UnsafeRawBufferPointer(start: base + from, count: offsets.count)
    }
}
