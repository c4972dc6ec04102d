import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP

@Suite("CRC32C")
struct CRC32CTests {
    /// RFC 3720 (iSCSI) appendix B.4 vectors, plus the common "123456789" check value.
    static let vectors: [([UInt8], UInt32)] = [
        ([UInt8](repeating: 0x00, count: 32), 0x8A91_36AA),
        ([UInt8](repeating: 0xFF, count: 32), 0x62A8_AB43),
        ((0..<32).map { UInt8($0) }, 0x46DD_794E),
        ((0..<32).reversed().map { UInt8($0) }, 0x113F_DB5C),
        (Array("123456789".utf8), 0xE306_9283),
        ([], 0x0000_0000),
        ([0x61], 0xC1D0_4330),
    ]

    @Test(arguments: vectors)
    func knownAnswers(bytes: [UInt8], expected: UInt32) {
        #expect(CRC32C.checksum(bytes) == expected)
        #expect(Digest.compute(.crc32c, of: bytes) == Self.bigEndian(expected))
    }

    /// The RFC 3720 iSCSI SCSI Read (10) command PDU example.
    @Test func iscsiReadCommandPDU() {
        let pdu: [UInt8] = [
            0x01, 0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
            0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        ]
        // The RFC lists the CRC as the bytes sent on the wire, least significant first: 56 3a 96 d9.
        #expect(CRC32C.checksum(pdu) == 0xD996_3A56)
    }

    @Test func finalizesBigEndianLikeXGoogHash() {
        var crc = CRC32C()
        crc.update(Array("123456789".utf8))
        #expect(crc.bigEndianBytes == [0xE3, 0x06, 0x92, 0x83])
        #expect(Base64.encode(crc.bigEndianBytes) == "4waSgw==")
        // GCS's x-goog-hash for "The quick brown fox jumps over the lazy dog".
        let fox = Digest.compute(.crc32c, of: Array("The quick brown fox jumps over the lazy dog".utf8))
        #expect(Base64.encode(fox) == "ImIEBA==")
    }

    /// The table implementation agrees with the bit-at-a-time definition for every length around the
    /// 16-byte step and at every alignment of the start.
    @Test func matchesBitwiseReferenceAtEveryLengthAndAlignment() {
        let bytes = DigestTests.pseudoRandomBytes(count: 300, seed: 3)
        for start in 0..<16 {
            for length in 0...(300 - 16) where length < 80 || length % 37 == 0 {
                let slice = Array(bytes[start..<start + length])
                #expect(CRC32C.checksum(slice) == Self.reference(slice), "start \(start), length \(length)")
            }
        }
    }

    @Test func streamingInOddPiecesEqualsOneShot() {
        let bytes = DigestTests.pseudoRandomBytes(count: 50_001, seed: 5)
        let expected = CRC32C.checksum(bytes)
        #expect(expected == Self.reference(bytes))
        for pieceSize in [1, 3, 15, 16, 17, 31, 1000, 4099] {
            var crc = CRC32C()
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + pieceSize, bytes.count)
                crc.update(Array(bytes[offset..<end]))
                offset = end
            }
            #expect(crc.value == expected, "pieces of \(pieceSize)")
        }
    }

    @Test func emptyUpdatesChangeNothing() {
        var crc = CRC32C()
        crc.update([])
        crc.update(Array("123456789".utf8))
        crc.update([])
        #expect(crc.value == 0xE306_9283)
        #expect(CRC32C().value == 0)
    }

    @Test func detectsASingleFlippedBit() {
        var bytes = DigestTests.pseudoRandomBytes(count: 4096, seed: 9)
        let original = CRC32C.checksum(bytes)
        for position in [0, 1, 15, 16, 2047, 4095] {
            bytes[position] ^= 0x10
            #expect(CRC32C.checksum(bytes) != original, "bit flipped at \(position)")
            bytes[position] ^= 0x10
        }
        #expect(CRC32C.checksum(bytes) == original)
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    /// CRC-32C one bit at a time, straight from the definition.
    static func reference(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 {
                crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1
            }
        }
        return ~crc
    }
}
