extension PrefixHasher {
    /// The hash with piece hashes: each piece, once the prefix covers it, is read and checked against
    /// its hash first, and only a piece that matches is read again into the whole file's digests. A
    /// piece that does not match goes to ``PieceCheck/mismatch``, which has it fetched again; the hash
    /// then waits for it as for any bytes not yet written. The second read comes from the page cache.
    func run(checking check: PieceCheck) throws -> [UInt8]? {
        let set = DigestSet(digests.algorithms)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 4096)
        defer { buffer.deallocate() }
        /// Feeds `range` of the file, read in chunks, to `update`.
        func read(_ range: Range<Int64>, into update: (UnsafeRawBufferPointer) -> Void) throws {
            var offset = range.lowerBound
            while offset < range.upperBound {
                let want = Int(min(Int64(chunkSize), range.upperBound - offset))
                let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want])
                let got = try file.read(into: slice, at: offset)
                guard got > 0 else { throw StorageError(call: "pread", path: file.path, errno: 5) }
                update(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
                offset += Int64(got)
            }
        }
        /// The bytes of `range`, for a piece that failed or recovered (rare, and at most a piece).
        func bytes(of range: Range<Int64>) throws -> [UInt8] {
            var result: [UInt8] = []
            result.reserveCapacity(Int(range.upperBound - range.lowerBound))
            try read(range) { result.append(contentsOf: $0) }
            return result
        }
        var index = 0
        var failures = 0
        var hashed: Int64 = 0
        var lastByteAt: ContinuousClock.Instant?
        while hashed < size {
            let piece = check.hashes.range(of: index, size: size)
            guard let frontier = scheduler.waitForFrontier(beyond: piece.upperBound - 1) else { return nil }
            if frontier >= size, lastByteAt == nil { lastByteAt = .now }
            let digest = Digest(check.algorithm)
            try read(piece) { digest.update($0) }
            guard check.matches(digest.finalize(), piece: index) else {
                failures += 1
                try check.mismatch(index, piece, failures, try bytes(of: piece))
                lastByteAt = nil
                continue
            }
            if failures > 0 { check.recovered(index, piece, try bytes(of: piece)) }
            if !set.isEmpty { try read(piece) { set.update($0) } }
            hashed = piece.upperBound
            scheduler.recordHashed(hashed)
            index += 1
            failures = 0
        }
        let values = set.finalize()
        digests.record(values, lastByteAt: lastByteAt ?? .now)
        return values[.sha256] ?? []
    }
}
