/// An expected digest of the whole file together with where the expectation came from, so that a
/// mismatch can say which promise the bytes broke.
package struct ChecksumExpectation: Sendable, Hashable, CustomStringConvertible {
    /// Where an expected digest came from.
    package enum Source: Sendable, Hashable, CustomStringConvertible {
        /// The user's `--checksum` option (or `Configuration.integrity.checksums`).
        case user
        /// A checksum file, named by the path or URL it was read from.
        case checksumFile(String)
        /// A response header, by name (`Repr-Digest`, `x-goog-hash`, …).
        case header(String)
        /// A document that describes the file, by name (`Metalink file x.meta4`).
        case document(String)

        /// `the given checksum`, `checksum file SHA256SUMS`, `Repr-Digest header`.
        package var description: String {
            switch self {
            case .user: return "the given checksum"
            case .checksumFile(let name): return "checksum file \(name)"
            case .header(let name): return "\(name) header"
            case .document(let name): return name
            }
        }
    }

    /// How the downloaded file compares with an expectation.
    package enum Verdict: Sendable, Equatable {
        case matched
        /// The file's digest differs; `actual` is its lowercase hexadecimal.
        case mismatched(actual: String)
        /// The expectation's algorithm was not computed (a bug in the caller's choice of algorithms), or
        /// its value is malformed.
        case notChecked
    }

    package var checksum: Checksum
    package var source: Source

    package init(_ checksum: Checksum, source: Source) {
        self.checksum = checksum
        self.source = source
    }

    /// `sha256=… from Repr-Digest header`.
    package var description: String { "\(checksum) from \(source)" }

    /// Compares the expectation with the digests computed over the whole file (a ``DigestSet`` result).
    package func verdict(for digests: [Digest.Algorithm: [UInt8]]) -> Verdict {
        guard let actual = digests[checksum.digestAlgorithm], checksum.expectedBytes != nil else {
            return .notChecked
        }
        return checksum.matches(actual) ? .matched : .mismatched(actual: Digest.hex(actual))
    }

    /// The one-line message for a mismatch: algorithm, expected value and its source, actual value.
    /// For example `sha256 mismatch for /data/x.iso: expected 9f86… (from Repr-Digest header), got
    /// 3a7b…`.
    func mismatchMessage(path: String, actual: String) -> String {
        "\(checksum.algorithm) mismatch for \(path): expected \(checksum.hexValue) (from \(source)), "
            + "got \(actual)"
    }
}
