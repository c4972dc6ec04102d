/// The hashes of a file's consecutive pieces, as a Metalink file lists them (RFC 5854 `<pieces>`):
/// every piece is checked as the download's hash reaches it, and one that does not match is fetched
/// again, from another source where there is one, instead of the whole file.
public struct PieceHashes: Sendable, Hashable {
    /// Bytes in every piece but the last, which holds the rest.
    public var length: Int64
    /// One hash per piece, in file order, all of one algorithm (`.sha256(hex)`, `.sha1(hex)`, …).
    public var hashes: [Checksum]

    /// Pieces of `length` bytes with these hashes.
    public init(length: Int64, hashes: [Checksum]) {
        self.length = length
        self.hashes = hashes
    }

    /// The piece hashes are usable for a file of `size` bytes: a positive length, one algorithm,
    /// well-formed values, and exactly as many pieces as the file has.
    ///
    /// - Throws: ``FastpullError/Code/usage`` saying what does not fit.
    func validate(size: Int64) throws(FastpullError) {
        guard length > 0 else {
            throw FastpullError(.usage, "the piece length \(length) is not a positive number of bytes")
        }
        let expected = size == 0 ? 0 : (size - 1) / length + 1
        guard Int64(hashes.count) == expected else {
            throw FastpullError(
                .usage,
                "\(hashes.count) piece hashes of \(length) bytes do not cover a file of \(size) bytes (\(expected) pieces)"
            )
        }
        guard let first = hashes.first else { return }
        for hash in hashes {
            guard hash.digestAlgorithm == first.digestAlgorithm else {
                throw FastpullError(.usage, "the piece hashes mix \(first.algorithm) and \(hash.algorithm)")
            }
            guard hash.expectedBytes != nil else {
                throw FastpullError(
                    .usage, "the piece hash '\(hash.hexValue)' is not a \(hash.algorithm) digest")
            }
        }
    }

    /// The bytes of piece `index` in a file of `size` bytes.
    func range(of index: Int, size: Int64) -> Range<Int64> {
        let start = Int64(index) * length
        return start..<min(start + length, size)
    }
}

/// What the streaming hash does with piece hashes: checks each piece before its bytes count towards
/// the whole file's digests, and hands a piece that does not match to `mismatch`, which has it fetched
/// again (or throws to end the download).
package struct PieceCheck: Sendable {
    var hashes: PieceHashes
    /// Called on the hasher's thread with the piece's index, its range, how many times it has failed
    /// now (1 the first time) and the bytes that failed; when it returns, the piece's bytes are no
    /// longer written and the hasher waits for them again.
    var mismatch: @Sendable (Int, Range<Int64>, Int, [UInt8]) throws -> Void
    /// Called on the hasher's thread when a piece that failed before matches now, with its index,
    /// range and the bytes that matched: where they differ from the bad ones tells who sent those.
    var recovered: @Sendable (Int, Range<Int64>, [UInt8]) -> Void = { _, _, _ in }

    var algorithm: Digest.Algorithm { hashes.hashes.first?.digestAlgorithm ?? .sha256 }

    /// Whether `digest` is piece `index`'s hash.
    func matches(_ digest: [UInt8], piece index: Int) -> Bool {
        hashes.hashes[index].matches(digest)
    }
}
