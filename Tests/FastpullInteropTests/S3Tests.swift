import FastpullFixtures
import Foundation
import Testing

/// What is particular to S3: objects uploaded in parts, whose SHA256 checksum is composite.
@Suite("S3 (moto) specifics")
struct S3Tests {
    /// A multipart object with SHA256 checksums: S3's checksum is a digest of the parts' digests, not
    /// of the object, so it cannot verify the download and must not fail it.
    @Test("multipart object with a composite SHA256 checksum downloads through a presigned URL")
    func multipartCompositeChecksum() async throws {
        let moto = try await MotoS3Server.start()
        try await moto.run { moto in
            try await InteropFolder.with("s3-multipart") { folder in
                let parts = [
                    await TestContent.random(
                        5 * TestContent.mebibyte, seed: TestContent.seed("multipart", "1")),
                    await TestContent.random(
                        TestContent.mebibyte + 1, seed: TestContent.seed("multipart", "2")),
                ]
                let whole = parts[0] + parts[1]
                try await moto.client.createBucket("parts")
                let object = try await moto.client.putMultipartObject(
                    bucket: "parts", key: "multi.bin", parts: parts)
                let fullObjectChecksum = Data(SHA256Digest.of(whole)).base64EncodedString()
                let checksum = try #require(
                    object.checksumSHA256, "moto kept no SHA256 checksum for the upload")
                try #require(
                    checksum != fullObjectChecksum,
                    "moto's checksum is the whole object's, so this test would not exercise a composite one")
                #expect(
                    object.etag?.hasSuffix("-2\"") == true, "a multipart ETag ends in -<parts>: \(object)")

                let url = moto.client.presignedGetURL(bucket: "parts", key: "multi.bin")
                let output = folder + "/multi.bin"
                let result = try await FastpullProcess.run([url, "-o", output, "-n", "4", "-q"], in: folder)
                #expect(
                    result.status == 0, "\(result) (S3 checksum \(checksum), ETag \(object.etag ?? "none"))")
                let comparison = await InteropFolder.compare(output, to: whole)
                #expect(comparison == .identical, "\(comparison)")
            }
        }
    }

    /// Without a signature in the URL, the probe asks S3 for its checksums (`x-amz-checksum-mode:
    /// ENABLED`): a single-part object's SHA-256 then verifies the download, and a multipart object's
    /// composite one is ignored, never failed.
    @Test("unsigned URLs ask for S3's checksums: whole-object ones verify, composite ones are ignored")
    func checksumModeOnUnsignedURLs() async throws {
        let moto = try await MotoS3Server.start()
        try await moto.run { moto in
            try await InteropFolder.with("s3-checksum-mode") { folder in
                let single = await TestContent.random(
                    3 * TestContent.mebibyte, seed: TestContent.seed("mode", "1"))
                let parts = [
                    await TestContent.random(5 * TestContent.mebibyte, seed: TestContent.seed("mode", "2")),
                    await TestContent.random(TestContent.mebibyte, seed: TestContent.seed("mode", "3")),
                ]
                try await moto.client.createBucket("mode", publicRead: true)
                try await moto.client.putObject(
                    bucket: "mode", key: "single.bin", data: single, checksum: true, publicRead: true)
                try await moto.client.putMultipartObject(
                    bucket: "mode", key: "multi.bin", parts: parts, publicRead: true)

                let base = "http://127.0.0.1:\(moto.port)/mode"
                let verified = try await FastpullProcess.run(
                    ["--json", base + "/single.bin", "-o", folder + "/single.bin"], in: folder)
                #expect(verified.status == 0, "\(verified)")
                #expect(
                    verified.stdout.contains("\"source\":\"x-amz-checksum-sha256\"")
                        || verified.stdout.contains("x-amz-checksum-sha256 header"),
                    "the object's SHA-256 did not verify the download: \(verified.stdout)")
                #expect(await InteropFolder.compare(folder + "/single.bin", to: single) == .identical)

                let composite = try await FastpullProcess.run(
                    ["--json", base + "/multi.bin", "-o", folder + "/multi.bin"], in: folder)
                #expect(composite.status == 0, "\(composite)")
                #expect(
                    await InteropFolder.compare(folder + "/multi.bin", to: parts[0] + parts[1]) == .identical)
            }
        }
    }
}
