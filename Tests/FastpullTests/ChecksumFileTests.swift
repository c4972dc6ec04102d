import Testing

@testable import Fastpull
@testable import FastpullEngine

@Suite("ChecksumFile")
struct ChecksumFileTests {
    static let sha256A = "a" + String(repeating: "0", count: 63)
    static let sha256B = "b" + String(repeating: "1", count: 63)
    static let sha256C = "c" + String(repeating: "2", count: 63)
    static let sha512A = "a" + String(repeating: "3", count: 127)
    static let sha1A = "a" + String(repeating: "4", count: 39)
    static let md5A = "a" + String(repeating: "5", count: 31)

    @Test func picksTheLineForOurFileAmongSeveral() {
        let text = """
            \(Self.sha256A)  fastpull-1.0-linux-arm64.tar.gz
            \(Self.sha256B)  fastpull-1.0-linux-x86_64.tar.gz
            \(Self.sha256C)  fastpull-1.0-macos.zip

            """
        #expect(
            ChecksumFile.parse(text, fileName: "fastpull-1.0-linux-x86_64.tar.gz") == .sha256(Self.sha256B))
        #expect(ChecksumFile.parse(text, fileName: "fastpull-1.0-macos.zip") == .sha256(Self.sha256C))
        #expect(ChecksumFile.entries(in: text).count == 3)
    }

    @Test func noMatchingLineGivesNil() {
        let text = "\(Self.sha256A)  a.iso\n\(Self.sha256B)  b.iso\n"
        #expect(ChecksumFile.parse(text, fileName: "c.iso") == nil)
        // A single named entry for another file is not a bare hash.
        #expect(ChecksumFile.parse("\(Self.sha256A)  a.iso\n", fileName: "c.iso") == nil)
        // A name that only contains ours is not ours.
        #expect(ChecksumFile.parse("\(Self.sha256A)  a.iso.sig\n", fileName: "a.iso") == nil)
        #expect(ChecksumFile.parse("", fileName: "a.iso") == nil)
        #expect(ChecksumFile.parse("# nothing here\n\n", fileName: "a.iso") == nil)
    }

    @Test func crlfLineEnds() {
        let text = "\(Self.sha256A)  a.iso\r\n\(Self.sha256B.uppercased())  b.iso\r\n"
        #expect(ChecksumFile.parse(text, fileName: "b.iso") == .sha256(Self.sha256B))
        #expect(ChecksumFile.parse(text, fileName: "a.iso") == .sha256(Self.sha256A))
        #expect(ChecksumFile.entries(in: text).map(\.name) == ["a.iso", "b.iso"])
        // Old Mac line ends, a byte-order mark, and no final newline.
        let classic = "\u{FEFF}\(Self.sha256A)  a.iso\r\(Self.sha256B)  b.iso"
        #expect(ChecksumFile.parse(classic, fileName: "b.iso") == .sha256(Self.sha256B))
        #expect(ChecksumFile.parse(classic, fileName: "a.iso") == .sha256(Self.sha256A))
    }

    @Test func binaryMarkerAndOtherSeparators() {
        let text = """
            \(Self.sha256A) *binary.bin
            \(Self.sha256B)  text.txt
            \(Self.sha256C) reversed.bin
            \(Self.sha512A)\ttabbed.bin
            """
        #expect(ChecksumFile.parse(text, fileName: "binary.bin") == .sha256(Self.sha256A))
        #expect(ChecksumFile.parse(text, fileName: "text.txt") == .sha256(Self.sha256B))
        #expect(ChecksumFile.parse(text, fileName: "reversed.bin") == .sha256(Self.sha256C))
        #expect(ChecksumFile.parse(text, fileName: "tabbed.bin") == .sha512(Self.sha512A))
        #expect(ChecksumFile.parse(text, fileName: "*binary.bin") == nil)
    }

    @Test func namesWithSpacesAreKept() {
        let text = "\(Self.sha256A)  my file (1).iso\n\(Self.sha256B) * star.iso\n"
        #expect(ChecksumFile.parse(text, fileName: "my file (1).iso") == .sha256(Self.sha256A))
        #expect(ChecksumFile.parse(text, fileName: " star.iso") == .sha256(Self.sha256B))
    }

    @Test func bsdStyle() {
        let text = """
            SHA256 (a.iso) = \(Self.sha256A)
            SHA512 (b.iso) = \(Self.sha512A)
            MD5 (c.iso) = \(Self.md5A)
            SHA1 (d.iso) = \(Self.sha1A)
            SHA2-256(e.iso)= \(Self.sha256B)
            SHA256 (odd) = name.iso) = \(Self.sha256C)
            """
        #expect(ChecksumFile.parse(text, fileName: "a.iso") == .sha256(Self.sha256A))
        #expect(ChecksumFile.parse(text, fileName: "b.iso") == .sha512(Self.sha512A))
        #expect(ChecksumFile.parse(text, fileName: "c.iso") == .md5(Self.md5A))
        #expect(ChecksumFile.parse(text, fileName: "d.iso") == .sha1(Self.sha1A))
        #expect(ChecksumFile.parse(text, fileName: "e.iso") == .sha256(Self.sha256B))
        #expect(ChecksumFile.parse(text, fileName: "odd) = name.iso") == .sha256(Self.sha256C))
    }

    @Test func bsdTagMustAgreeWithTheDigestLength() {
        let text = """
            SHA512 (a.iso) = \(Self.sha256A)
            MD5 (b.iso) = \(Self.sha256B)
            BLAKE2b (c.iso) = \(Self.sha512A)
            SHA384 (d.iso) = \(Self.sha256C)
            """
        #expect(ChecksumFile.entries(in: text).isEmpty)
        #expect(ChecksumFile.parse(text, fileName: "a.iso") == nil)
    }

    @Test(arguments: [
        ("a" + String(repeating: "5", count: 31), Digest.Algorithm.md5),
        ("a" + String(repeating: "4", count: 39), .sha1),
        ("a" + String(repeating: "0", count: 63), .sha256),
        ("a" + String(repeating: "3", count: 127), .sha512),
    ])
    func algorithmFromHexLength(hex: String, algorithm: Digest.Algorithm) {
        let checksum = ChecksumFile.parse("\(hex)  f.bin\n", fileName: "f.bin")
        #expect(checksum?.digestAlgorithm == algorithm)
        #expect(checksum?.hexValue == hex)
    }

    @Test func otherHexLengthsAreNotEntries() {
        for count in [8, 31, 33, 48, 56, 96, 129] {
            let hex = String(repeating: "a", count: count)
            #expect(ChecksumFile.parse("\(hex)  f.bin\n", fileName: "f.bin") == nil, "\(count) digits")
            #expect(ChecksumFile.parse("\(hex)\n", fileName: "f.bin") == nil, "\(count) digits, bare")
        }
    }

    @Test func singleBareHash() {
        #expect(ChecksumFile.parse("\(Self.sha256A)\n", fileName: "anything.iso") == .sha256(Self.sha256A))
        #expect(ChecksumFile.parse("  \(Self.sha256A)", fileName: "x") == .sha256(Self.sha256A))
        #expect(ChecksumFile.parse("\(Self.md5A.uppercased())  \r\n", fileName: "x") == .md5(Self.md5A))
        #expect(
            ChecksumFile.parse("# from the release page\n\(Self.sha512A)\n", fileName: "x")
                == .sha512(Self.sha512A))
        // `sha256sum < file` names standard input "-".
        #expect(ChecksumFile.parse("\(Self.sha256A)  -\n", fileName: "x.iso") == .sha256(Self.sha256A))
    }

    @Test func severalBareHashesAreNotUsed() {
        let text = "\(Self.sha256A)\n\(Self.sha256B)\n"
        #expect(ChecksumFile.parse(text, fileName: "x.iso") == nil)
    }

    @Test func commentsAndJunkAreSkipped() {
        let text = """
            -----BEGIN PGP SIGNED MESSAGE-----
            Hash: SHA256

            # Release 1.0
            \(Self.sha256A)  a.iso
            not a checksum line
            \(Self.sha256B)a.iso
            -----BEGIN PGP SIGNATURE-----
            iQIzBAEBCAAdFiEE0123456789abcdef
            -----END PGP SIGNATURE-----
            """
        #expect(ChecksumFile.parse(text, fileName: "a.iso") == .sha256(Self.sha256A))
        #expect(ChecksumFile.entries(in: text).count == 1)
    }

    @Test func basenameMatching() {
        let text = """
            \(Self.sha256A)  ./dist/tool.tar.gz
            \(Self.sha256B)  other/thing.zip
            """
        #expect(ChecksumFile.parse(text, fileName: "tool.tar.gz") == .sha256(Self.sha256A))
        #expect(ChecksumFile.parse(text, fileName: "downloads/thing.zip") == .sha256(Self.sha256B))
        // An exact match wins over a basename match.
        let both = "\(Self.sha256A)  sub/x.iso\n\(Self.sha256B)  x.iso\n"
        #expect(ChecksumFile.parse(both, fileName: "x.iso") == .sha256(Self.sha256B))
        #expect(ChecksumFile.parse(both, fileName: "sub/x.iso") == .sha256(Self.sha256A))
    }

    @Test func severalFileNamesAreTriedInOrder() {
        let text = "\(Self.sha256A)  remote.iso\n\(Self.sha256B)  local.iso\n"
        #expect(ChecksumFile.parse(text, fileNames: ["missing.iso", "local.iso"]) == .sha256(Self.sha256B))
        #expect(ChecksumFile.parse(text, fileNames: ["remote.iso", "local.iso"]) == .sha256(Self.sha256A))
        #expect(ChecksumFile.parse(text, fileNames: []) == nil)
    }

    @Test func severalAlgorithmsForOneFile() {
        let text = """
            MD5 (x.iso) = \(Self.md5A)
            SHA256 (x.iso) = \(Self.sha256A)
            SHA512 (x.iso) = \(Self.sha512A)
            SHA1 (x.iso) = \(Self.sha1A)
            """
        #expect(ChecksumFile.parse(text, fileName: "x.iso") == .sha512(Self.sha512A))
        #expect(
            ChecksumFile.parse(text, fileName: "x.iso", checksumFileName: "CHECKSUMS")
                == .sha512(Self.sha512A))
        #expect(ChecksumFile.parse(text, fileName: "x.iso", checksumFileName: "MD5SUMS") == .md5(Self.md5A))
        #expect(
            ChecksumFile.parse(text, fileName: "x.iso", checksumFileName: "https://host/r/SHA256SUMS?sig=1")
                == .sha256(Self.sha256A))
        #expect(
            ChecksumFile.parse(text, fileName: "x.iso", checksumFileName: "x.iso.sha1") == .sha1(Self.sha1A))
        // A hint for an algorithm the file does not list falls back to the strongest.
        let noSHA512 = "\(Self.md5A)  x.iso\n\(Self.sha256A)  x.iso\n"
        #expect(
            ChecksumFile.parse(noSHA512, fileName: "x.iso", checksumFileName: "SHA512SUMS")
                == .sha256(Self.sha256A))
    }

    @Test func contradictoryLinesGiveNil() {
        let text = "\(Self.sha256A)  x.iso\n\(Self.sha256B)  x.iso\n"
        #expect(ChecksumFile.parse(text, fileName: "x.iso") == nil)
        let repeated = "\(Self.sha256A)  x.iso\n\(Self.sha256A.uppercased()) *x.iso\n"
        #expect(ChecksumFile.parse(repeated, fileName: "x.iso") == .sha256(Self.sha256A))
    }

    @Test(arguments: [
        ("SHA256SUMS", Digest.Algorithm?.some(.sha256)), ("sha512sums.txt", .sha512), ("MD5SUMS", .md5),
        ("SHA1SUMS", .sha1), ("tool-1.0.tar.gz.sha256", .sha256), ("tool.tar.gz.sha512", .sha512),
        ("tool.tar.gz.md5", .md5), ("/srv/release/x.sha256sum", .sha256),
        ("https://example.com/dl/SHA-512SUMS?x=sha1", .sha512), ("https://example.com/md5/CHECKSUMS", nil),
        ("CHECKSUMS", nil), ("tool.sum", nil), ("https://example.com/x.asc#sha256", nil),
    ])
    func algorithmHints(name: String, expected: Digest.Algorithm?) {
        #expect(ChecksumFile.algorithmHint(checksumFileName: name) == expected)
    }

    @Test func gnuEscapedNames() {
        let text = """
            \\\(Self.sha256A)  back\\\\slash.bin
            \\\(Self.sha256B)  new\\nline.bin
            \\SHA256 (tab\\\\bsd.bin) = \(Self.sha256C)
            \\\(Self.sha512A)  bad\\qescape.bin
            \\\(Self.md5A)
            \\
            """
        #expect(ChecksumFile.parse(text, fileName: "back\\slash.bin") == .sha256(Self.sha256A))
        #expect(ChecksumFile.parse(text, fileName: "new\nline.bin") == .sha256(Self.sha256B))
        #expect(ChecksumFile.parse(text, fileName: "tab\\bsd.bin") == .sha256(Self.sha256C))
        #expect(ChecksumFile.parse(text, fileName: "bad\\qescape.bin") == nil)
        #expect(ChecksumFile.entries(in: text).count == 3)
    }

    @Test func oddInputDoesNotCrash() {
        let inputs = [
            "\\", "*", "(", ")", " = ", "SHA256 (", "SHA256 () = ", "SHA256 (x) = ", "\(Self.sha256A) ",
            "\(Self.sha256A) *", "\(Self.sha256A)\u{301}  x", "é\(Self.sha256A)  x", "\r\n\r\n\r",
            "\u{0}\u{0}",
            String(repeating: "a", count: 10_000), "SHA256 (x\u{301}) = \(Self.sha256A)",
        ]
        for input in inputs {
            _ = ChecksumFile.parse(input, fileName: "x")
            _ = ChecksumFile.entries(in: input)
        }
        #expect(ChecksumFile.parse("SHA256 () = \(Self.sha256A)", fileName: "") == nil)
    }
}
