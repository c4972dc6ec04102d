import FastpullFixtures
import Foundation
import Testing

/// `--checksum`, `--checksum-file` and `--keep-partial` through the built binary.
@Suite("fastpull integrity options")
struct IntegrityCLITests {
    let server: FixtureServer
    let folder: String
    /// Served by the fixture server under `/files/`.
    let served: String

    init() throws {
        let workspace = try ServedWorkspace(label: "fastpull-cli")
        server = workspace.server
        folder = workspace.folder
        served = workspace.served
    }

    var listing: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted() }

    static let size = 6 << 20
    static let content = FixtureContent.bytes(count: size, seed: 4)

    /// The digest of `bytes` in lowercase hexadecimal: coreutils for the SHA family and MD5, a bitwise
    /// CRC-32C here (independent of Fastpull's table-driven one).
    static func digest(_ algorithm: String, of bytes: [UInt8] = content) throws -> String {
        if algorithm == "crc32c" {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            }
            return String(format: "%08x", ~crc)
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "fastpull-digest-\(UUID().uuidString)")
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/\(algorithm)sum")
        process.arguments = [file.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return String(text.prefix { $0 != " " })
    }

    func run(_ arguments: [String]) async throws -> CLIRunner.Result {
        try await CLIRunner.run(arguments, in: folder)
    }

    func url(_ query: String = "") -> String {
        server.url("/gen/\(Self.size)?seed=4\(query)").absoluteString
    }

    @Test(
        "A flipped byte in the first, a middle or the last segment exits 6 and leaves nothing",
        arguments: [0, size / 2 + 1, size - 1])
    func corruptionExitsSix(offset: Int) async throws {
        let expected = try Self.digest("sha256")
        var corrupted = Self.content
        corrupted[offset] ^= 0xFF
        let actual = try Self.digest("sha256", of: corrupted)
        let result = try await run([
            url("&corrupt=\(offset)"), "-o", "c.bin", "-n", "4", "--min-segment", "1M", "--checksum",
            "sha256=\(expected)",
        ])
        #expect(result.status == 6, "\(result.stderr)")
        #expect(result.stderr.contains("sha256 mismatch for "))
        #expect(result.stderr.contains("expected \(expected) (from the given checksum), got \(actual)"))
        // Where the file was to go, then the one-line error.
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 2 && lines[0].hasPrefix("fastpull: saving to "), "\(result.stderr)")
        #expect(listing.isEmpty)
    }

    @Test(arguments: ["md5", "sha1", "sha512", "crc32c"])
    func everyAlgorithmOnTheCommandLine(algorithm: String) async throws {
        let expected = try Self.digest(algorithm)
        let result = try await run([
            "-n", "3", url(), "-o", "a.bin", "--checksum", "\(algorithm.uppercased())=\(expected)",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        // The summary shows a long digest's first 16 digits (crc32c's 8 whole).
        let shown = expected.count > 16 ? "\(expected.prefix(16))…" : expected
        #expect(result.stderr.contains("\(algorithm) \(shown)"), "\(result.stderr)")
        #expect(result.stderr.contains("checksum verified: \(algorithm) from --checksum"))
        #expect(listing == ["a.bin"])

        let wrong = String(expected.reversed())
        let bad = try await run([url(), "-o", "b.bin", "--checksum", "\(algorithm)=\(wrong)"])
        #expect(bad.status == 6)
        #expect(bad.stderr.contains("\(algorithm) mismatch"))
        #expect(bad.stderr.contains("got \(expected)"))
        #expect(listing == ["a.bin"])
    }

    @Test func base64AndSeveralChecksumsAtOnce() async throws {
        let md5 = try Self.digest("md5")
        var bytes: [UInt8] = []
        var index = md5.startIndex
        while index < md5.endIndex {
            let next = md5.index(index, offsetBy: 2)
            bytes.append(UInt8(md5[index..<next], radix: 16)!)
            index = next
        }
        let base64 = Data(bytes).base64EncodedString()
        let result = try await run([
            url(), "-o", "m.bin", "--checksum", "md5=\(base64)", "--checksum",
            "sha256=\(try Self.digest("sha256"))",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("checksum verified: md5 from --checksum, sha256 from --checksum"))
    }

    @Test func localChecksumFileWithCRLFAndBinaryMarkers() async throws {
        let sha256 = try Self.digest("sha256")
        let text =
            "\(String(repeating: "1", count: 64)) *other.iso\r\n\(sha256) *x.bin\r\n"
            + "\(String(repeating: "2", count: 64))  notes.txt\r\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: folder + "/SHA256SUMS"))
        let result = try await run([url(), "-o", "x.bin", "--checksum-file", "SHA256SUMS"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("checksum verified: sha256 from checksum file SHA256SUMS"))
        #expect(listing == ["SHA256SUMS", "x.bin"])
    }

    @Test func checksumFileOverHTTP() async throws {
        let sha512 = try Self.digest("sha512")
        let text = "\(sha512)  y.bin\n\(String(repeating: "3", count: 128))  z.bin\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: served + "/SHA512SUMS"))
        let sums = server.url("/files/SHA512SUMS").absoluteString
        let result = try await run([url(), "-o", "y.bin", "--checksum-file", sums])
        #expect(result.status == 0, "\(result.stderr)")
        // The summary shows a digest's first 16 digits; `--json` has it whole.
        #expect(result.stderr.contains("sha512 \(sha512.prefix(16))…"))
        #expect(!result.stderr.contains(sha512))
        #expect(result.stderr.contains("checksum verified: sha512 from checksum file \(sums)"))
        // The checksum file was fetched into a temporary folder, not next to the output.
        #expect(listing == ["y.bin"])

        let noEntry = try await run([url(), "-o", "y2.bin", "--checksum-file", sums])
        #expect(noEntry.status == 2, "\(noEntry.stderr)")
        #expect(noEntry.stderr.contains("has no entry for 'y2.bin'"))

        let corrupt = try await run([
            url("&corrupt=\(Self.size / 3)"), "-o", "z.bin", "--checksum-file", sums,
        ])
        #expect(corrupt.status == 6, "\(corrupt.stderr)")
        #expect(corrupt.stderr.contains("(from checksum file \(sums))"))
        #expect(listing == ["y.bin"])
    }

    @Test func unreachableOrMissingChecksumFiles() async throws {
        let missing = try await run([url(), "-o", "m.bin", "--checksum-file", "nowhere/SUMS"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("--checksum-file: cannot read 'nowhere/SUMS'"))

        let notFound = server.url("/files/NOPE").absoluteString
        let remote = try await run([url(), "-o", "m.bin", "--checksum-file", notFound, "--retries", "0"])
        #expect(remote.status == 4)
        #expect(remote.stderr.contains("could not fetch the checksum file \(notFound)"))
        #expect(listing.isEmpty)
    }

    @Test func keepPartialKeepsTheBadBytes() async throws {
        let offset = Self.size / 2
        let result = try await run([
            url("&corrupt=\(offset)"), "-o", "k.bin", "--keep-partial", "--checksum",
            "sha256=\(try Self.digest("sha256"))",
        ])
        #expect(result.status == 6)
        #expect(result.stderr.contains("kept in \(folder)/k.bin.part"))
        #expect(listing == ["k.bin.part"])
        let kept = try #require(FileManager.default.contents(atPath: folder + "/k.bin.part"))
        #expect(kept.count == Self.size)
        #expect(kept[offset] == Self.content[offset] ^ 0xFF)

        // Without a journal the next run does not resume into the bad bytes; it warns and starts over.
        let again = try await run([url(), "-o", "k.bin", "--checksum", "sha256=\(try Self.digest("sha256"))"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("has no journal"))
        #expect(!again.stderr.contains("resum"))
        #expect(listing == ["k.bin"])
    }

    @Test func helpDescribesTheIntegrityOptions() async throws {
        let result = try await run(["--help"])
        for text in ["--checksum ALGO=VALUE", "--checksum-file PATH|URL", "--keep-partial", "crc32c"] {
            #expect(result.stdout.contains(text))
        }
    }
}
