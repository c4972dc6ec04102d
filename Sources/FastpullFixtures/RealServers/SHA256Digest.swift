import COpenSSL
import Foundation

/// SHA-256 and HMAC-SHA256 through the system OpenSSL, for signing S3 requests (AWS Signature Version 4)
/// and for S3's `x-amz-checksum-sha256`.
public enum SHA256Digest {
    /// The SHA-256 digest of `bytes`.
    public static func of(_ bytes: some ContiguousBytes) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        bytes.withUnsafeBytes { input in
            _ = EVP_Digest(input.baseAddress, input.count, &output, &length, EVP_sha256(), nil)
        }
        return output
    }

    /// HMAC-SHA256 of `message` under `key`.
    static func hmac(key: [UInt8], _ message: some ContiguousBytes) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        message.withUnsafeBytes { input in
            let bytes = input.bindMemory(to: UInt8.self)
            _ = HMAC(EVP_sha256(), key, Int32(key.count), bytes.baseAddress, input.count, &output, &length)
        }
        return output
    }

    /// Lowercase hexadecimal, as SigV4 writes digests and signatures.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
