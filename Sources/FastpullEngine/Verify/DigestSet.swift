/// Several digests fed from the same bytes: whatever the expected checksums need, and SHA-256 where
/// the download reports it (``Configuration/Integrity/computesSHA256``). With none, feeding it costs nothing.
///
/// A large buffer is fed in pieces of ``pieceSize`` bytes, each piece to every algorithm in turn, so the
/// bytes are read from memory once and stay in the CPU cache for the second and later algorithms.
/// Not thread-safe: one owner feeds it at a time.
package final class DigestSet {
    /// Bytes handed to each algorithm before moving on to the next one.
    static let pieceSize = 64 * 1024

    /// The algorithms computed, in the order first given, without repeats.
    let algorithms: [Digest.Algorithm]

    private let digests: [Digest]

    /// A set computing every algorithm in `algorithms`.
    package init(_ algorithms: some Sequence<Digest.Algorithm> = []) {
        var ordered: [Digest.Algorithm] = []
        for algorithm in algorithms where !ordered.contains(algorithm) {
            ordered.append(algorithm)
        }
        self.algorithms = ordered
        self.digests = ordered.map { Digest($0) }
    }

    /// A set computing every algorithm the expectations name.
    convenience init(for expectations: [ChecksumExpectation]) {
        self.init(expectations.map(\.checksum.digestAlgorithm))
    }

    /// Whether the set computes anything at all.
    var isEmpty: Bool { digests.isEmpty }

    package func update(_ bytes: UnsafeRawBufferPointer) {
        if digests.isEmpty { return }
        if digests.count == 1 {
            digests[0].update(bytes)
            return
        }
        var start = 0
        while start < bytes.count {
            let end = min(start + Self.pieceSize, bytes.count)
            let piece = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
            for digest in digests {
                digest.update(piece)
            }
            start = end
        }
    }

    func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Finishes every digest; the set must not be used afterwards.
    package func finalize() -> [Digest.Algorithm: [UInt8]] {
        var result: [Digest.Algorithm: [UInt8]] = [:]
        for digest in digests {
            result[digest.algorithm] = digest.finalize()
        }
        return result
    }
}
