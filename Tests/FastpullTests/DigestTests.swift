import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP

@Suite("Digest")
struct DigestTests {
    static let twoBlock448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
    static let twoBlock896 =
        "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
        + "mnopqrstnopqrstu"

    static func hex(_ algorithm: Digest.Algorithm, _ text: String) -> String {
        Digest.hex(Digest.compute(algorithm, of: Array(text.utf8)))
    }

    /// FIPS 180-2 / NIST CSRC example vectors.
    @Test(arguments: [
        (Digest.Algorithm.sha1, "abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        (.sha1, "", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        (.sha1, twoBlock448, "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
        (.sha256, "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (.sha256, "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        (.sha256, twoBlock448, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        (
            .sha512, "abc",
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                + "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
        ),
        (
            .sha512, "",
            "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
                + "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"
        ),
        (
            .sha512, twoBlock448,
            "204a8fc6dda82f0a0ced7beb8e08a41657c16ef468b228a8279be331a703c335"
                + "96fd15c13b1b07f9aa1d3bea57789ca031ad85c7a71dd70354ec631238ca3445"
        ),
        (
            .sha512, twoBlock896,
            "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018"
                + "501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909"
        ),
    ])
    func nistVectors(algorithm: Digest.Algorithm, message: String, expected: String) {
        #expect(Self.hex(algorithm, message) == expected)
    }

    /// RFC 1321 appendix A.5 test suite.
    @Test(arguments: [
        ("", "d41d8cd98f00b204e9800998ecf8427e"),
        ("a", "0cc175b9c0f1b6a831c399e269772661"),
        ("abc", "900150983cd24fb0d6963f7d28e17f72"),
        ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
        ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
        (
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            "d174ab98d277d9f5a5611c2c9f419d9f"
        ),
        (String(repeating: "1234567890", count: 8), "57edf4a22be3c955ac49da2e2107b67a"),
    ])
    func rfc1321Vectors(message: String, expected: String) {
        #expect(Self.hex(.md5, message) == expected)
    }

    /// One million repetitions of 'a', fed in 1000-byte pieces (FIPS 180-2 long-message vectors).
    @Test(arguments: [
        (Digest.Algorithm.sha1, "34aa973cd4c4daa4f61eeb2bdbad27316534016f"),
        (.sha256, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
        (
            .sha512,
            "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973eb"
                + "de0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b"
        ),
    ])
    func millionA(algorithm: Digest.Algorithm, expected: String) {
        let digest = Digest(algorithm)
        let piece = [UInt8](repeating: UInt8(ascii: "a"), count: 1000)
        for _ in 0..<1000 {
            digest.update(piece)
        }
        #expect(Digest.hex(digest.finalize()) == expected)
    }

    @Test(arguments: Digest.Algorithm.allCases)
    func digestLengths(algorithm: Digest.Algorithm) {
        #expect(Digest.compute(algorithm, of: [1, 2, 3]).count == algorithm.digestLength)
    }

    /// Feeding the same bytes in odd-sized pieces (including empty ones) gives the one-shot digest.
    @Test(arguments: Digest.Algorithm.allCases)
    func streamingInOddPiecesEqualsOneShot(algorithm: Digest.Algorithm) {
        let bytes = Self.pseudoRandomBytes(count: 100_003, seed: 7)
        let oneShot = Digest.compute(algorithm, of: bytes)
        for sizes in [[1], [7, 0, 13], [63, 64, 65], [4095, 1, 4097], [99_999]] {
            let digest = Digest(algorithm)
            var offset = 0
            var index = 0
            bytes.withUnsafeBytes { raw in
                while offset < raw.count {
                    let size = min(sizes[index % sizes.count], raw.count - offset)
                    digest.update(UnsafeRawBufferPointer(rebasing: raw[offset..<offset + size]))
                    offset += size
                    index += 1
                }
            }
            #expect(digest.finalize() == oneShot, "pieces \(sizes)")
        }
    }

    @Test func differentInputsGiveDifferentDigests() {
        for algorithm in Digest.Algorithm.allCases {
            #expect(Self.hex(algorithm, "abc") != Self.hex(algorithm, "abd"), "\(algorithm)")
        }
    }

    @Test func algorithmNames() {
        #expect(Digest.Algorithm(name: "SHA-256") == .sha256)
        #expect(Digest.Algorithm(name: "sha256") == .sha256)
        #expect(Digest.Algorithm(name: "SHA2-256") == .sha256)
        #expect(Digest.Algorithm(name: "Sha-512") == .sha512)
        #expect(Digest.Algorithm(name: "SHA1") == .sha1)
        #expect(Digest.Algorithm(name: "sha-1") == .sha1)
        #expect(Digest.Algorithm(name: "MD5") == .md5)
        #expect(Digest.Algorithm(name: "CRC32C") == .crc32c)
        #expect(Digest.Algorithm(name: "crc-32c") == .crc32c)
        #expect(Digest.Algorithm(name: "sha") == nil)
        #expect(Digest.Algorithm(name: "sha384") == nil)
        #expect(Digest.Algorithm(name: "crc32") == nil)
        #expect(Digest.Algorithm(name: "") == nil)
    }

    // MARK: - DigestSet

    @Test func digestSetComputesExactlyTheAlgorithmsGiven() {
        #expect(DigestSet().algorithms == [])
        #expect(DigestSet().isEmpty)
        #expect(DigestSet([.md5, .sha256, .md5, .crc32c]).algorithms == [.md5, .sha256, .crc32c])
    }

    @Test func digestSetMatchesSeparateDigests() {
        // Larger than several pieces, and not a multiple of the piece size.
        let bytes = Self.pseudoRandomBytes(count: 3 * DigestSet.pieceSize + 12_345, seed: 11)
        let set = DigestSet(Digest.Algorithm.allCases)
        set.update(Array(bytes[..<1000]))
        set.update(Array(bytes[1000...]))
        let result = set.finalize()
        #expect(Set(result.keys) == Set(Digest.Algorithm.allCases))
        for algorithm in Digest.Algorithm.allCases {
            #expect(result[algorithm] == Digest.compute(algorithm, of: bytes), "\(algorithm)")
        }
    }

    @Test func digestSetForExpectations() {
        let expectations = [
            ChecksumExpectation(.md5(String(repeating: "0", count: 32)), source: .user),
            ChecksumExpectation(.crc32c("00000000"), source: .header("x-goog-hash")),
        ]
        let set = DigestSet(for: expectations)
        #expect(set.algorithms == [.md5, .crc32c])
        let result = set.finalize()
        #expect(result[.sha256] == nil)
        #expect(result[.md5].map(Digest.hex) == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(result[.crc32c] == [0, 0, 0, 0])
    }

    // MARK: - Hexadecimal and base64

    @Test func hexRoundTrip() {
        let bytes: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0xAB, 0xFF]
        #expect(Digest.hex(bytes) == "00017f80abff")
        #expect(Digest.bytes(hex: "00017F80abFF") == bytes)
        #expect(Digest.bytes(hex: "") == nil)
        #expect(Digest.bytes(hex: "abc") == nil)
        #expect(Digest.bytes(hex: "zz") == nil)
        #expect(Digest.bytes(hex: "0x00") == nil)
        #expect(Digest.isHex("aBc1", count: 4))
        #expect(!Digest.isHex("aBc1", count: 5))
        #expect(!Digest.isHex("aBg1", count: 4))
    }

    @Test(arguments: [
        // RFC 4648 §10 test vectors.
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
    ])
    func base64Vectors(plain: String, encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(plain.utf8))
        let unpadded = encoded.replacingOccurrences(of: "=", with: "")
        #expect(Base64.decode(unpadded) == Array(plain.utf8))
    }

    @Test func base64Alphabets() {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF]
        #expect(Base64.encode(bytes) == "+/+/")
        #expect(Base64.decode("+/+/") == bytes)
        #expect(Base64.decode("-_-_") == nil)
        #expect(Base64.decode("-_-_", allowURLSafe: true) == bytes)
    }

    @Test(arguments: [
        "Zg=", "Zg===", "Z", "Zm9vY", "Zm9v=", "Zm9v====", "Zm 9v", "Zm9v\n", "Zm9v!", "=Zm9", "Zg==Zg==",
        "Zm9vYg=a",
    ])
    func base64Rejects(text: String) {
        #expect(Base64.decode(text) == nil)
    }

    @Test func base64RoundTripsEveryLength() {
        for count in 0..<70 {
            let bytes = Self.pseudoRandomBytes(count: count, seed: UInt64(count))
            #expect(Base64.decode(Base64.encode(bytes)) == bytes, "\(count) bytes")
        }
    }

    /// Deterministic test bytes (splitmix64).
    static func pseudoRandomBytes(count: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        var result = [UInt8]()
        result.reserveCapacity(count)
        while result.count < count {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            for shift in stride(from: 0, to: 64, by: 8) where result.count < count {
                result.append(UInt8(truncatingIfNeeded: z >> UInt64(shift)))
            }
        }
        return result
    }
}
