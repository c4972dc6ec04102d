import FastpullFixtures
import Foundation
import Testing

/// `--cert`/`--key`: a client certificate for a server that requires one; without it, or with a
/// key that is not its own, a clear TLS error (exit 8).
@Suite("fastpull --cert, --key")
struct ClientCertificateCLITests {
    let certificates = FixturePaths.certificatesDirectory

    /// An HTTPS fixture server that requires a certificate from the test CA, serving `files` under
    /// `/files/`.
    func server(files: String? = nil) throws -> FixtureServer {
        var configuration = FixtureServer.Configuration()
        configuration.tls = true
        configuration.clientCertificateAuthority = certificates + "/ca.pem"
        configuration.filesDirectory = files
        return try FixtureServer(configuration)
    }

    @Test func aServerThatRequiresACertificateGetsIt() async throws {
        let folder = try ScratchFolders.make("fastpull-client-cert").path
        let served = folder + "/served"
        try FileManager.default.createDirectory(atPath: served, withIntermediateDirectories: true)
        let server = try server(files: served)
        let size = 1 << 20
        let url = server.url("/gen/\(size)?seed=93").absoluteString
        let content = Data(FixtureContent.bytes(count: size, seed: 93))
        let trust = ["--cacert", certificates + "/ca.pem"]

        let separate = try await CLIRunner.run(
            [
                url, "-o", "a.bin", "--cert", certificates + "/client.pem", "--key",
                certificates + "/client.key",
            ]
                + trust, in: folder)
        #expect(separate.status == 0, "\(separate.stderr)")
        #expect(FileManager.default.contents(atPath: folder + "/a.bin") == content)

        // The key after the certificate in one file, as curl takes it; -E is curl's short name.
        let both = folder + "/both.pem"
        let pem = try String(contentsOfFile: certificates + "/client.pem", encoding: .utf8)
        let key = try String(contentsOfFile: certificates + "/client.key", encoding: .utf8)
        try (pem + key).write(toFile: both, atomically: true, encoding: .utf8)
        let combined = try await CLIRunner.run([url, "-o", "b.bin", "-E", both] + trust, in: folder)
        #expect(combined.status == 0, "\(combined.stderr)")
        #expect(FileManager.default.contents(atPath: folder + "/b.bin") == content)

        // A checksum file on the same server is fetched with the certificate too.
        let sha = try await CLIRunner.shell("sha256sum a.bin | cut -c1-64", in: folder).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try "\(sha)  d.bin\n".write(toFile: served + "/SUMS", atomically: true, encoding: .utf8)
        let checked = try await CLIRunner.run(
            [url, "-o", "d.bin", "--checksum-file", server.url("/files/SUMS").absoluteString, "-E", both]
                + trust, in: folder)
        #expect(checked.status == 0, "\(checked.stderr)")
        #expect(FileManager.default.contents(atPath: folder + "/d.bin") == content)

        let without = try await CLIRunner.run([url, "-o", "c.bin"] + trust, in: folder)
        #expect(without.status == 8, "\(without.stderr)")
        #expect(without.stderr.contains("certificate required"), "\(without.stderr)")
        #expect(
            without.stderr.contains("a client certificate it accepts is needed: --cert"), "\(without.stderr)")
        #expect(!without.stderr.contains("retrying"), "\(without.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder + "/c.bin"))
    }

    @Test func aKeyThatIsNotTheCertificatesOrAMissingFileIsAnError() async throws {
        let server = try server()
        let folder = try ScratchFolders.make("fastpull-client-cert-bad").path
        let url = server.url("/gen/1000").absoluteString
        let mismatched = try await CLIRunner.run(
            [
                url, "-o", "x", "--cacert", certificates + "/ca.pem", "--cert", certificates + "/client.pem",
                "--key", certificates + "/server.key",
            ], in: folder)
        #expect(mismatched.status == 8, "\(mismatched.stderr)")
        #expect(
            mismatched.stderr.contains(
                "could not use the key \(certificates)/server.key with the client certificate \(certificates)/client.pem: "
            ),
            "\(mismatched.stderr)")

        let missing = try await CLIRunner.run([url, "--cert", folder + "/none.pem"], in: folder)
        #expect(missing.status == 2)
        #expect(
            missing.stderr.contains("error: --cert: cannot read '\(folder)/none.pem'"), "\(missing.stderr)")
        let keyAlone = try await CLIRunner.run([url, "--key", certificates + "/client.key"], in: folder)
        #expect(keyAlone.status == 2)
        #expect(
            keyAlone.stderr.contains("error: --key: is the key of a --cert client certificate"),
            "\(keyAlone.stderr)")
    }
}
