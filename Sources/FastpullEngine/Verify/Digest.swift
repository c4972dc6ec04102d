import COpenSSL
import FastpullHTTP

/// A streaming message digest: SHA-256, SHA-512, SHA-1 and MD5 through libcrypto's EVP interface, and
/// CRC-32C in Swift (``CRC32C``), all behind one interface.
///
/// Feed bytes with `update` in pieces of any size, then call ``finalize()`` once. Not thread-safe: one
/// owner feeds it at a time.
package final class Digest {
    /// The digest algorithms Fastpull computes.
    package enum Algorithm: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        case sha256
        case sha512
        case sha1
        case md5
        /// CRC-32C (Castagnoli), finalised as 4 bytes big-endian, the order Google Cloud Storage's
        /// `x-goog-hash` and S3's `x-amz-checksum-crc32c` encode.
        case crc32c

        /// The name users write (`sha256`, `crc32c`).
        package var name: String { rawValue }

        package var description: String { rawValue }

        /// Bytes in a finished digest.
        var digestLength: Int {
            switch self {
            case .sha256: return 32
            case .sha512: return 64
            case .sha1: return 20
            case .md5: return 16
            case .crc32c: return 4
            }
        }

        /// Higher is stronger; used to prefer one algorithm over another when several are offered.
        var strength: Int {
            switch self {
            case .sha512: return 4
            case .sha256: return 3
            case .sha1: return 2
            case .md5: return 1
            case .crc32c: return 0
            }
        }

        /// The algorithm for a name as users, checksum tools and HTTP fields spell it
        /// (`sha256`, `SHA-256`, `sha-512`, `SHA1`, `sha-1`, `md5`, `crc32c`, `CRC-32C`), case-insensitive;
        /// nil for anything else. The RFC 3230 name `SHA` (SHA-1) is not accepted here because it is
        /// ambiguous outside that header; callers that parse `Digest` map it themselves.
        init?(name: some StringProtocol) {
            switch name.lowercased() {
            case "sha256", "sha-256", "sha2-256": self = .sha256
            case "sha512", "sha-512", "sha2-512": self = .sha512
            case "sha1", "sha-1": self = .sha1
            case "md5": self = .md5
            case "crc32c", "crc-32c": self = .crc32c
            default: return nil
            }
        }

        fileprivate var evp: OpaquePointer? {
            switch self {
            case .sha256: return EVP_sha256()
            case .sha512: return EVP_sha512()
            case .sha1: return EVP_sha1()
            case .md5: return EVP_md5()
            case .crc32c: return nil
            }
        }
    }

    /// The algorithm this digest computes.
    let algorithm: Algorithm

    /// The libcrypto context, nil for CRC-32C.
    private let context: OpaquePointer?
    private var crc = CRC32C()
    private var finished = false

    init(_ algorithm: Algorithm) {
        self.algorithm = algorithm
        guard let evp = algorithm.evp else {
            context = nil
            return
        }
        guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, evp, nil) == 1 else {
            fatalError("libcrypto could not initialise a \(algorithm) digest context")
        }
        self.context = context
    }

    deinit {
        if let context { EVP_MD_CTX_free(context) }
    }

    func update(_ bytes: UnsafeRawBufferPointer) {
        precondition(!finished, "Digest.update after finalize")
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        if let context {
            EVP_DigestUpdate(context, base, bytes.count)
        } else {
            crc.update(bytes)
        }
    }

    func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Finishes the digest and returns its ``Algorithm/digestLength`` bytes; the object must not be used
    /// afterwards.
    func finalize() -> [UInt8] {
        precondition(!finished, "Digest.finalize called twice")
        finished = true
        guard let context else { return crc.bigEndianBytes }
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &output, &length)
        return Array(output.prefix(Int(length)))
    }

    /// The digest of `bytes` in one call.
    static func compute(_ algorithm: Algorithm, of bytes: UnsafeRawBufferPointer) -> [UInt8] {
        let digest = Digest(algorithm)
        digest.update(bytes)
        return digest.finalize()
    }

    /// The digest of `bytes` in one call.
    static func compute(_ algorithm: Algorithm, of bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { compute(algorithm, of: $0) }
    }

    /// Lowercase hexadecimal of `bytes`.
    package static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes spelled by `text`, an even number of hexadecimal digits (either case); nil for anything
    /// else, including an empty string.
    static func bytes(hex text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard !utf8.isEmpty, utf8.count % 2 == 0 else { return nil }
        var result = [UInt8]()
        result.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = hexDigit(utf8[index]), let low = hexDigit(utf8[index + 1]) else { return nil }
            result.append(high << 4 | low)
            index += 2
        }
        return result
    }

    /// Whether `text` is exactly `count` hexadecimal digits (either case).
    static func isHex(_ text: some StringProtocol, count: Int) -> Bool {
        text.utf8.count == count && text.utf8.allSatisfy { hexDigit($0) != nil }
    }

    /// The value of one hexadecimal digit (either case); nil for any other byte.
    static func hexDigit(_ byte: UInt8) -> UInt8? { HexDigit.value(byte) }
}
