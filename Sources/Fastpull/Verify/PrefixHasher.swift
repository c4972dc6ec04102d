/// Hashes the file as it is downloaded by following the scheduler's contiguous frontier and reading
/// the newly completed bytes back while they are still in the page cache. When the last byte lands,
/// only the tail behind the frontier remains to hash, so verification costs no second pass.
///
/// `run()` blocks its thread: call it from a task on its own ``ThreadExecutor``.
struct PrefixHasher {
    let file: OutputFile
    let scheduler: Scheduler
    let size: Int64
    var chunkSize = 1 << 20

    /// Returns the SHA-256 of `[0, size)`, or nil if the scheduler stopped before the whole file was
    /// complete.
    func run() throws(StorageError) -> [UInt8]? {
        let digest = Digest(.sha256)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 4096)
        defer { buffer.deallocate() }
        var hashed: Int64 = 0
        while hashed < size {
            guard let frontier = scheduler.waitForFrontier(beyond: hashed) else { return nil }
            while hashed < frontier {
                let want = Int(min(Int64(chunkSize), frontier - hashed))
                let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want])
                let got = try file.read(into: slice, at: hashed)
                guard got > 0 else { throw StorageError(call: "pread", path: file.path, errno: 5) }
                digest.update(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
                hashed += Int64(got)
            }
        }
        return digest.finalize()
    }
}
