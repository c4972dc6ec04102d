import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP

@Suite("Checksum")
struct ChecksumTests {
    /// Digests of "The quick brown fox jumps over the lazy dog" in both spellings.
    static let foxSHA256Hex = "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592"
    static let foxSHA256Base64 = "16j7swfXgJRpypq8sAguT41WUeRtPNt2LQLQvzfJ5ZI="
    static let foxSHA512Hex =
        "07e547d9586f6a73f73fbac0435ed76951218fb7d0c8d788a309d785436bbb64"
        + "2e93a252a954f23912547d1e8a3b5ed6e1bfd7097821233fa0538f3db854fee6"
    static let foxSHA512Base64 =
        "B+VH2VhvanP3P7rAQ17XaVEhj7fQyNeIownXhUNru2Quk6JSqVTyORJUfR6KO17W4b/XCXghIz+gU489uFT+5g=="
    static let foxSHA1Hex = "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"
    static let foxSHA1Base64 = "L9ThxnotKPzthJ7hu3bnORuT6xI="
    static let foxMD5Hex = "9e107d9d372bb6826bd81d3542a419d6"
    static let foxMD5Base64 = "nhB9nTcrtoJr2B01QqQZ1g=="
    static let foxCRC32CHex = "22620404"
    static let foxCRC32CBase64 = "ImIEBA=="

    @Test(arguments: [
        ("sha256=\(foxSHA256Hex)", Checksum.sha256(foxSHA256Hex)),
        ("SHA256=\(foxSHA256Hex.uppercased())", .sha256(foxSHA256Hex)),
        ("sha-256=\(foxSHA256Hex)", .sha256(foxSHA256Hex)),
        ("sha512=\(foxSHA512Hex)", .sha512(foxSHA512Hex)),
        ("SHA-512=\(foxSHA512Hex)", .sha512(foxSHA512Hex)),
        ("sha1=\(foxSHA1Hex)", .sha1(foxSHA1Hex)),
        ("sha-1=\(foxSHA1Hex)", .sha1(foxSHA1Hex)),
        ("md5=\(foxMD5Hex)", .md5(foxMD5Hex)),
        ("MD5=\(foxMD5Hex.uppercased())", .md5(foxMD5Hex)),
        ("crc32c=\(foxCRC32CHex)", .crc32c(foxCRC32CHex)),
        ("crc32c=E3069283", .crc32c("e3069283")),
    ])
    func parsesHex(text: String, expected: Checksum) throws {
        let checksum = try Checksum(parsing: text)
        #expect(checksum == expected)
        #expect(checksum.hexValue == expected.hexValue)
        #expect(checksum.hexValue == checksum.hexValue.lowercased())
    }

    @Test(arguments: [
        ("sha256=\(foxSHA256Base64)", Checksum.sha256(foxSHA256Hex)),
        ("sha256=\(foxSHA256Base64.dropLast())", .sha256(foxSHA256Hex)),
        ("sha512=\(foxSHA512Base64)", .sha512(foxSHA512Hex)),
        ("sha512=\(foxSHA512Base64.dropLast(2))", .sha512(foxSHA512Hex)),
        ("sha1=\(foxSHA1Base64)", .sha1(foxSHA1Hex)),
        ("md5=\(foxMD5Base64)", .md5(foxMD5Hex)),
        ("md5=1B2M2Y8AsgTpgAmY7PhCfg==", .md5("d41d8cd98f00b204e9800998ecf8427e")),
        ("md5=1B2M2Y8AsgTpgAmY7PhCfg", .md5("d41d8cd98f00b204e9800998ecf8427e")),
        ("crc32c=\(foxCRC32CBase64)", .crc32c(foxCRC32CHex)),
        ("crc32c=4waSgw==", .crc32c("e3069283")),
        ("crc32c=4waSgw", .crc32c("e3069283")),
        // The URL-safe alphabet: 0xfb 0xff 0xbf… spells "-_-_".
        ("crc32c=-_-_-w==", .crc32c("fbffbffb")),
    ])
    func parsesBase64(text: String, expected: Checksum) throws {
        let checksum = try Checksum(parsing: text)
        #expect(checksum == expected)
        #expect(checksum.hexValue == expected.hexValue.lowercased())
    }

    /// Base64 values are stored as lowercase hexadecimal, so `description` gives the canonical form.
    @Test func base64IsNormalisedToLowercaseHex() throws {
        let checksum = try Checksum(parsing: "md5=\(Self.foxMD5Base64)")
        #expect(checksum.hexValue == Self.foxMD5Hex)
        #expect(checksum.description == "md5=\(Self.foxMD5Hex)")
        #expect(checksum.algorithm == "md5")
    }

    @Test func surroundingWhitespaceIsIgnored() throws {
        #expect(try Checksum(parsing: "  crc32c=e3069283\t") == .crc32c("e3069283"))
    }

    @Test func sourceCompatibleSHA256Case() {
        let checksum = Checksum.sha256(Self.foxSHA256Hex.uppercased())
        #expect(checksum.algorithm == "sha256")
        #expect(checksum.hexValue == Self.foxSHA256Hex)
        #expect(checksum.description == "sha256=\(Self.foxSHA256Hex)")
    }

    @Test func equalityIgnoresCaseButNotAlgorithm() {
        #expect(Checksum.sha256("AB") == .sha256("ab"))
        #expect(Set([Checksum.sha256("AB"), .sha256("ab")]).count == 1)
        #expect(Checksum.md5("ab") != .crc32c("ab"))
        #expect(Checksum.sha256("ab") != .sha256("ac"))
    }

    @Test(arguments: [
        (Checksum.sha256(""), "sha256"), (.sha512(""), "sha512"), (.sha1(""), "sha1"), (.md5(""), "md5"),
        (.crc32c(""), "crc32c"),
    ])
    func algorithmNames(checksum: Checksum, name: String) {
        #expect(checksum.algorithm == name)
        #expect(checksum.digestAlgorithm.name == name)
    }

    @Test func errorsNameTheProblem() {
        Self.expectUsageError("sha256", mentioning: ["ALGO=VALUE", "'sha256'"])
        Self.expectUsageError("crc99=00", mentioning: ["unsupported", "'crc99'", "sha256", "crc32c"])
        Self.expectUsageError("=abc", mentioning: ["unsupported", "''"])
        Self.expectUsageError("sha256=", mentioning: ["empty"])
        Self.expectUsageError(
            "sha256=xyz", mentioning: ["64 hexadecimal", "44 base64", "'xyz'", "3 characters"])
        Self.expectUsageError(
            "sha256=\(Self.foxSHA256Hex.dropLast())", mentioning: ["64 hexadecimal", "63 characters"])
        Self.expectUsageError("sha256=\(Self.foxSHA256Hex)0", mentioning: ["65 characters"])
        Self.expectUsageError("md5=\(Self.foxSHA256Hex)", mentioning: ["md5", "32 hexadecimal", "24 base64"])
        Self.expectUsageError("sha512=\(Self.foxSHA256Base64)", mentioning: ["sha512", "128 hexadecimal"])
        Self.expectUsageError("crc32c=0xe3069283", mentioning: ["crc32c", "8 hexadecimal", "8 base64"])
        Self.expectUsageError("crc32c=e306928", mentioning: ["crc32c"])
        Self.expectUsageError("md5=nhB9nTcrtoJr2B01QqQZ1g=", mentioning: ["md5"])
        Self.expectUsageError("md5=nhB9nTcrtoJr2B01 QqQZ1g==", mentioning: ["md5"])
        Self.expectUsageError("sha1=\(Self.foxMD5Hex)", mentioning: ["sha1", "40 hexadecimal"])
    }

    /// A hexadecimal string of one algorithm's length is never read as base64 for another.
    @Test func hexOfTheWrongLengthIsNotReadAsBase64() {
        // 32 hex digits are valid base64 (24 bytes) but 24 bytes is no digest length.
        Self.expectUsageError("sha256=\(Self.foxMD5Hex)", mentioning: ["sha256"])
        // 44 base64 characters of a sha256 are not 64 hex digits, and decode to 32 bytes only.
        #expect((try? Checksum(parsing: "sha256=\(Self.foxSHA256Base64)"))?.hexValue == Self.foxSHA256Hex)
    }

    @Test func expectedBytesAndMatching() {
        let checksum = Checksum.crc32c("E3069283")
        #expect(checksum.expectedBytes == [0xE3, 0x06, 0x92, 0x83])
        #expect(checksum.matches(Digest.compute(.crc32c, of: Array("123456789".utf8))))
        #expect(!checksum.matches(Digest.compute(.crc32c, of: Array("123456780".utf8))))
        #expect(Checksum.sha256("not hex").expectedBytes == nil)
        #expect(Checksum.sha256("abcd").expectedBytes == nil)
        #expect(!Checksum.sha256("abcd").matches([0xAB, 0xCD]))
    }

    // MARK: - ChecksumExpectation

    @Test func expectationSourcesDescribeThemselves() {
        #expect(ChecksumExpectation.Source.user.description == "the given checksum")
        #expect(
            ChecksumExpectation.Source.checksumFile("SHA256SUMS").description == "checksum file SHA256SUMS")
        #expect(
            ChecksumExpectation.Source.checksumFile("https://example.com/x.sha256").description
                == "checksum file https://example.com/x.sha256")
        #expect(ChecksumExpectation.Source.header("Repr-Digest").description == "Repr-Digest header")
        let expectation = ChecksumExpectation(.crc32c("E3069283"), source: .header("x-goog-hash"))
        #expect(expectation.description == "crc32c=e3069283 from x-goog-hash header")
    }

    @Test func expectationVerdicts() {
        let bytes = Array("The quick brown fox jumps over the lazy dog".utf8)
        let digests = DigestSet([.md5, .crc32c])
        digests.update(bytes)
        let computed = digests.finalize()
        let matching = ChecksumExpectation(.md5(Self.foxMD5Hex.uppercased()), source: .user)
        #expect(matching.verdict(for: computed) == .matched)
        let wrong = ChecksumExpectation(.crc32c("e3069283"), source: .header("x-goog-hash"))
        #expect(wrong.verdict(for: computed) == .mismatched(actual: Self.foxCRC32CHex))
        let notComputed = ChecksumExpectation(.sha512(Self.foxSHA512Hex), source: .checksumFile("SHA512SUMS"))
        #expect(notComputed.verdict(for: computed) == .notChecked)
        let malformed = ChecksumExpectation(.sha256("xyz"), source: .user)
        #expect(malformed.verdict(for: computed) == .notChecked)
        #expect(
            wrong.mismatchMessage(path: "/data/fox.txt", actual: Self.foxCRC32CHex)
                == "crc32c mismatch for /data/fox.txt: expected e3069283 (from x-goog-hash header), "
                + "got 22620404"
        )
    }

    static func expectUsageError(
        _ text: String, mentioning parts: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            let checksum = try Checksum(parsing: text)
            Issue.record("'\(text)' parsed as \(checksum)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == .usage, sourceLocation: sourceLocation)
            for part in parts {
                #expect(
                    error.message.contains(part), "'\(error.message)' should mention \(part)",
                    sourceLocation: sourceLocation)
            }
        }
    }
}
