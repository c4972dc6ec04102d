import FastpullHTTP

/// An expected digest of the whole file, checked before the file appears at its output path.
///
/// The associated value is the digest in hexadecimal (either case; ``hexValue`` is the normalised
/// form). Two checksums are equal when they name the same algorithm and the same digest, whatever the
/// case of their digits. `crc32c` is written as the 8 hexadecimal digits of the 32-bit value, most
/// significant first (`123456789` has crc32c `e3069283`).
public enum Checksum: Sendable, Hashable, CustomStringConvertible {
    /// A SHA-256 digest as 64 hexadecimal digits (case-insensitive).
    case sha256(String)
    /// A SHA-512 digest as 128 hexadecimal digits (case-insensitive).
    case sha512(String)
    /// A SHA-1 digest as 40 hexadecimal digits (case-insensitive).
    case sha1(String)
    /// An MD5 digest as 32 hexadecimal digits (case-insensitive).
    case md5(String)
    /// A CRC-32C (Castagnoli) checksum as 8 hexadecimal digits, most significant first
    /// (case-insensitive).
    case crc32c(String)

    /// The algorithm's name as users write it: `sha256`, `sha512`, `sha1`, `md5` or `crc32c`.
    public var algorithm: String { digestAlgorithm.name }

    /// The expected value, normalised to lowercase hexadecimal.
    public var hexValue: String { rawValue.lowercased() }

    /// `ALGO=HEX`, the form `--checksum` takes.
    public var description: String { "\(algorithm)=\(hexValue)" }

    /// Parses `ALGO=VALUE` (for example `sha256=9f86…` or `md5=1B2M2Y8AsgTpgAmY7PhCfg==`), as given to
    /// `--checksum`.
    ///
    /// `ALGO` is `sha256`, `sha512`, `sha1`, `md5` or `crc32c`, case-insensitive, with or without a hyphen
    /// (`SHA-256`). `VALUE` is the digest in one of two spellings, told apart by length alone, so no value
    /// can be read both ways:
    ///
    /// - hexadecimal, either case: exactly twice the digest's byte count (64 digits for sha256, 128 for
    ///   sha512, 40 for sha1, 32 for md5, 8 for crc32c);
    /// - otherwise base64 (RFC 4648, standard or URL-safe alphabet, padding optional) that decodes to
    ///   exactly the digest's byte count: 44 characters for sha256 (43 unpadded), 88 for sha512 (86),
    ///   28 for sha1 (27), 24 for md5 (22, the `Content-MD5` form), 8 for crc32c (6; the `x-goog-hash`
    ///   form, big-endian). Only crc32c's padded base64 has the same length as its hexadecimal, and its
    ///   `==` padding is never a hexadecimal digit.
    ///
    /// Whitespace around the whole text is ignored. The result always holds lowercase hexadecimal.
    ///
    /// - Throws: ``FastpullError`` with code ``FastpullError/Code/usage`` naming what is wrong.
    public init(parsing text: String) throws(FastpullError) {
        let trimmed = HTTPHeaders.trimmingWhitespace(Substring(text))
        guard let equals = trimmed.firstIndex(of: "=") else {
            throw FastpullError(
                .usage, "expected ALGO=VALUE (for example sha256=<64 hex digits>), got '\(text)'")
        }
        let name = trimmed[..<equals]
        let value = trimmed[trimmed.index(after: equals)...]
        guard let algorithm = Digest.Algorithm(name: name) else {
            let supported = Digest.Algorithm.allCases.map(\.name).joined(separator: ", ")
            throw FastpullError(
                .usage,
                "unsupported checksum algorithm '\(name)' (supported: \(supported))")
        }
        guard !value.isEmpty else {
            throw FastpullError(.usage, "the \(algorithm) checksum is empty; give it as \(algorithm)=VALUE")
        }
        guard let bytes = Self.decode(value, as: algorithm, allowBase64: true) else {
            let length = algorithm.digestLength
            let base64Length = (length + 2) / 3 * 4
            throw FastpullError(
                .usage,
                "a \(algorithm) checksum is \(2 * length) hexadecimal digits or \(base64Length) base64 "
                    + "characters, got '\(value)' (\(value.utf8.count) characters)")
        }
        self.init(algorithm, bytes: bytes)
    }

    /// The value as given, not normalised.
    private var rawValue: String {
        switch self {
        case .sha256(let value), .sha512(let value), .sha1(let value), .md5(let value), .crc32c(let value):
            return value
        }
    }

    /// Equal when the algorithm and the digest match, ignoring the case of hexadecimal digits.
    public static func == (lhs: Checksum, rhs: Checksum) -> Bool {
        lhs.digestAlgorithm == rhs.digestAlgorithm && lhs.hexValue == rhs.hexValue
    }

    /// Hashes the algorithm and the normalised value, consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(digestAlgorithm)
        hasher.combine(hexValue)
    }
}

extension Checksum {
    /// The checksum of `algorithm` with the hexadecimal value `hex` (not validated).
    init(_ algorithm: Digest.Algorithm, hex: String) {
        switch algorithm {
        case .sha256: self = .sha256(hex)
        case .sha512: self = .sha512(hex)
        case .sha1: self = .sha1(hex)
        case .md5: self = .md5(hex)
        case .crc32c: self = .crc32c(hex)
        }
    }

    /// The checksum of `algorithm` whose digest is `bytes`.
    init(_ algorithm: Digest.Algorithm, bytes: [UInt8]) {
        self.init(algorithm, hex: Digest.hex(bytes))
    }

    /// The algorithm that computes this checksum.
    package var digestAlgorithm: Digest.Algorithm {
        switch self {
        case .sha256: return .sha256
        case .sha512: return .sha512
        case .sha1: return .sha1
        case .md5: return .md5
        case .crc32c: return .crc32c
        }
    }

    /// The expected digest, or nil when the value (built directly through a case, not parsed) is not
    /// exactly the algorithm's length in hexadecimal digits.
    package var expectedBytes: [UInt8]? {
        let value = rawValue
        guard Digest.isHex(value, count: 2 * digestAlgorithm.digestLength) else { return nil }
        return Digest.bytes(hex: value)
    }

    /// Whether `digest` (the algorithm's output over the whole file) is this checksum. False for a
    /// malformed expected value.
    func matches(_ digest: [UInt8]) -> Bool {
        expectedBytes == digest
    }

    /// The digest spelled by `value`: exactly `2 × digestLength` hexadecimal digits, or (with
    /// `allowBase64`) base64 in the standard or URL-safe alphabet, padding optional, decoding to exactly
    /// `digestLength` bytes. Nil for anything else.
    static func decode(_ value: some StringProtocol, as algorithm: Digest.Algorithm, allowBase64: Bool)
        -> [UInt8]?
    {
        let length = algorithm.digestLength
        if Digest.isHex(value, count: 2 * length) {
            return Digest.bytes(hex: value)
        }
        guard allowBase64, let bytes = Base64.decode(value, allowURLSafe: true), bytes.count == length else {
            return nil
        }
        return bytes
    }
}
