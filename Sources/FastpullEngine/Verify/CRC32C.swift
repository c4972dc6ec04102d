/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF), the
/// checksum of iSCSI (RFC 3720), Google Cloud Storage and S3's `x-amz-checksum-crc32c`.
///
/// Computed with slice-by-16 tables (16 × 256 entries, 16 KiB, built once on first use): each step folds
/// 16 input bytes with 16 independent table lookups, which keeps the loop free of the one-byte-at-a-time
/// dependency chain of the classic table method.
package struct CRC32C: Sendable, Hashable {
    /// The reflected Castagnoli polynomial.
    static let polynomial: UInt32 = 0x82F6_3B78

    /// The running register, before the final XOR.
    private var register: UInt32 = 0xFFFF_FFFF

    init() {}

    /// The checksum of the bytes fed so far.
    var value: UInt32 { ~register }

    /// ``value`` as 4 bytes, most significant first (how `x-goog-hash` and `x-amz-checksum-crc32c`
    /// encode it before base64).
    var bigEndianBytes: [UInt8] {
        let value = value
        return [
            UInt8(truncatingIfNeeded: value >> 24), UInt8(truncatingIfNeeded: value >> 16),
            UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value),
        ]
    }

    /// The checksum of `bytes` in one call.
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc = CRC32C()
        crc.update(bytes)
        return crc.value
    }

    mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard var pointer = bytes.baseAddress, bytes.count > 0 else { return }
        var remaining = bytes.count
        var crc = register
        Self.tables.withUnsafeBufferPointer { table in
            while remaining >= 16 {
                let low = UInt64(littleEndian: pointer.loadUnaligned(as: UInt64.self)) ^ UInt64(crc)
                let high = UInt64(littleEndian: pointer.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
                let a =
                    table[Self.slot(15, low)] ^ table[Self.slot(14, low &>> 8)]
                    ^ table[Self.slot(13, low &>> 16)] ^ table[Self.slot(12, low &>> 24)]
                let b =
                    table[Self.slot(11, low &>> 32)] ^ table[Self.slot(10, low &>> 40)]
                    ^ table[Self.slot(9, low &>> 48)] ^ table[Self.slot(8, low &>> 56)]
                let c =
                    table[Self.slot(7, high)] ^ table[Self.slot(6, high &>> 8)]
                    ^ table[Self.slot(5, high &>> 16)] ^ table[Self.slot(4, high &>> 24)]
                let d =
                    table[Self.slot(3, high &>> 32)] ^ table[Self.slot(2, high &>> 40)]
                    ^ table[Self.slot(1, high &>> 48)] ^ table[Self.slot(0, high &>> 56)]
                crc = (a ^ b) ^ (c ^ d)
                pointer += 16
                remaining &-= 16
            }
            while remaining > 0 {
                let byte = pointer.load(as: UInt8.self)
                crc = table[Int(truncatingIfNeeded: (crc ^ UInt32(byte)) & 0xFF)] ^ (crc &>> 8)
                pointer += 1
                remaining &-= 1
            }
        }
        register = crc
    }

    /// Index of the low byte of `value` in table `k`.
    @inline(__always)
    private static func slot(_ k: Int, _ value: UInt64) -> Int {
        k &* 256 &+ Int(truncatingIfNeeded: value & 0xFF)
    }

    /// `tables[k * 256 + n]` is the CRC register after feeding byte `n` followed by `k` zero bytes
    /// (without the initial and final inversion). Table 0 is the classic byte-wise table.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 16 * 256)
        for n in 0..<256 {
            var crc = UInt32(n)
            for _ in 0..<8 {
                crc = crc & 1 == 1 ? (crc >> 1) ^ polynomial : crc >> 1
            }
            tables[n] = crc
        }
        for k in 1..<16 {
            for n in 0..<256 {
                let previous = tables[(k - 1) * 256 + n]
                tables[k * 256 + n] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
            }
        }
        return tables
    }()
}
