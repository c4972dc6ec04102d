import FastpullNet
import Synchronization

/// Hashes the file as it is downloaded by following the scheduler's contiguous frontier and reading
/// the newly completed bytes back while they are still in the page cache: through a read-only mapping
/// of the file (no copy) where the file already has its full length, else with `pread`. When the last byte lands,
/// only the tail behind the frontier remains to hash, so verification costs no second pass.
///
/// Every chunk goes through one ``DigestSet`` with every algorithm in ``digests`` (SHA-256 where the
/// download reports it). With none to compute, it only follows the frontier (reading nothing), which
/// the scheduler's horizon and the end of the download wait for. On resume the hasher starts from
/// byte 0 like any other run, so the kept prefix is rehashed once, as it is read back.
///
/// `run()` blocks its thread: call it from a task on its own ``ThreadExecutor``.
package struct PrefixHasher {
    let file: OutputFile
    let scheduler: Scheduler
    let size: Int64
    /// The algorithms to compute, and where every result is left.
    var digests = Digests()
    var chunkSize = 1 << 20
    /// How much of the file one mapping covers. Mapped pages the hash has touched count towards the
    /// process's resident memory until the mapping goes, so it stays small.
    var mappingSize: Int64 = 4 << 20
    /// Piece hashes to check each piece against before it counts (nil: none).
    var pieces: PieceCheck? = nil

    /// Returns the SHA-256 of `[0, size)` (empty when it is not computed), or nil if the scheduler
    /// stopped before the whole file was complete. Every digest of ``digests`` is recorded there, with
    /// the moment the last byte was seen.
    func run() throws -> [UInt8]? {
        if let pieces { return try run(checking: pieces) }
        let set = DigestSet(digests.algorithms)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 4096)
        defer { buffer.deallocate() }
        var hashed: Int64 = 0
        var lastByteAt: ContinuousClock.Instant?
        // Mapping a page past the end of the file would fault: map only a file already at full length.
        var mappable = (try? file.size()).map { $0 >= size } ?? false
        var region: MappedRegion?
        while hashed < size {
            guard let frontier = scheduler.waitForFrontier(beyond: hashed) else { return nil }
            if frontier >= size, lastByteAt == nil { lastByteAt = .now }
            if set.isEmpty {
                hashed = frontier
                scheduler.recordHashed(hashed)
                continue
            }
            while hashed < frontier {
                let want = min(Int64(chunkSize), frontier - hashed)
                if mappable, region.map({ !$0.range.contains(hashed) }) ?? true {
                    region = nil
                    region = file.map(hashed..<min(hashed + mappingSize, size))
                    if region == nil { mappable = false }
                }
                if let region {
                    let end = min(hashed + want, region.range.upperBound)
                    set.update(region.bytes(hashed..<end))
                    hashed = end
                } else {
                    let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Int(want)])
                    let got = try file.read(into: slice, at: hashed)
                    guard got > 0 else { throw StorageError(call: "pread", path: file.path, errno: 5) }
                    set.update(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
                    hashed += Int64(got)
                }
                scheduler.recordHashed(hashed)
                // The frontier may reach the end while this loop is still behind it: note when.
                if lastByteAt == nil, scheduler.frontier >= size { lastByteAt = .now }
            }
        }
        let values = set.finalize()
        digests.record(values, lastByteAt: lastByteAt ?? .now)
        return values[.sha256] ?? []
    }
}

extension PrefixHasher {
    /// What one download's streaming hash computes and, once it has run to the end, the results: shared
    /// by the pipeline, which chooses the algorithms from the expectations and reads the values to
    /// verify them, and the hasher's thread, which fills them in.
    final class Digests: Sendable {
        /// Every algorithm asked for, in order, without repeats.
        let algorithms: [Digest.Algorithm]
        private let state = Mutex<
            (values: [Digest.Algorithm: [UInt8]]?, lastByteAt: ContinuousClock.Instant?)
        >(
            (nil, nil))

        /// Every algorithm in `algorithms`.
        init(_ algorithms: some Sequence<Digest.Algorithm> = []) {
            var ordered: [Digest.Algorithm] = []
            for algorithm in algorithms where !ordered.contains(algorithm) {
                ordered.append(algorithm)
            }
            self.algorithms = ordered
        }

        /// Stores the finished digests and when the hasher saw the file's last byte written.
        func record(_ values: [Digest.Algorithm: [UInt8]], lastByteAt: ContinuousClock.Instant) {
            state.withLock { $0 = (values, lastByteAt) }
        }

        /// The digests of the whole file, once the hasher has finished.
        var values: [Digest.Algorithm: [UInt8]]? { state.withLock { $0.values } }

        /// When the hasher saw the last byte written, once it has finished.
        var lastByteAt: ContinuousClock.Instant? { state.withLock { $0.lastByteAt } }
    }
}
