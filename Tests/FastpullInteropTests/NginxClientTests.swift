import FastpullFixtures
import Foundation
import Testing

/// What nginx asks of a client: a client certificate (`ssl_verify_client on`), and a cookie set by a
/// redirect before the file is served.
@Suite("fastpull and nginx's client requirements")
struct NginxClientTests {
    let certificates = FixturePaths.certificatesDirectory

    @Test func aClientCertificateNginxRequires() async throws {
        let root = try ServerFolder.create("docroot-nginx-cert", permissions: 0o755)
        var options = NginxServer.Options()
        options.clientCertificateAuthority = certificates + "/ca.pem"
        let data = await TestContent.random(3 * TestContent.mebibyte, seed: TestContent.seed("nginx-cert"))
        try data.write(to: URL(fileURLWithPath: root + "/file.bin"))
        try await Self.serving(root, options) { nginx, folder in
            let url = nginx.tlsBaseURL + "/file.bin"
            let trust = ["--cacert", certificates + "/ca.pem", "-q"]
            let with = try await FastpullProcess.run(
                [
                    url, "-o", folder + "/a.bin", "--cert", certificates + "/client.pem", "--key",
                    certificates + "/client.key", "-n", "4",
                ] + trust, in: folder)
            #expect(with.status == 0, "\(with)")
            #expect(FileManager.default.contents(atPath: folder + "/a.bin") == data)
            let without = try await FastpullProcess.run([url, "-o", folder + "/b.bin"] + trust, in: folder)
            #expect(without.status == 4, "\(without)")
            #expect(without.stderr.contains("HTTP 400"), "\(without)")
        }
    }

    @Test func aCookieNginxSetsOnARedirect() async throws {
        let root = try ServerFolder.create("docroot-nginx-cookie", permissions: 0o755)
        var options = NginxServer.Options()
        options.serverLines = """
            location = /login { add_header Set-Cookie "sid=abc123; Path=/; HttpOnly"; return 302 /files/file.bin; }
                location /files/ { alias \(root)/; if ($cookie_sid != "abc123") { return 403; } }
            """
        let data = await TestContent.random(3 * TestContent.mebibyte, seed: TestContent.seed("nginx-cookie"))
        try data.write(to: URL(fileURLWithPath: root + "/file.bin"))
        try await Self.serving(root, options) { nginx, folder in
            let url = "http://127.0.0.1:\(nginx.port)/login"
            let result = try await FastpullProcess.run(
                [url, "-o", folder + "/a.bin", "-n", "4", "--min-segment", "256K", "-q"], in: folder)
            #expect(result.status == 0, "\(result)")
            #expect(FileManager.default.contents(atPath: folder + "/a.bin") == data)
            let refused = try await FastpullProcess.run(
                [url, "-o", folder + "/b.bin", "--no-cookies", "-q"], in: folder)
            #expect(refused.status == 4, "\(refused)")
        }
    }

    /// Runs `body` with nginx serving `root` as `options` say and a work folder, then stops nginx and
    /// removes `root`, also when `body` throws.
    static func serving(
        _ root: String, _ options: NginxServer.Options,
        _ body: (NginxServer, String) async throws -> Void
    ) async throws {
        let nginx = try await NginxServer.start(documentRoot: root, options: options)
        do {
            try await InteropFolder.with("nginx-client") { folder in try await body(nginx, folder) }
        } catch {
            await nginx.stop()
            try? FileManager.default.removeItem(atPath: root)
            throw error
        }
        await nginx.stop()
        try? FileManager.default.removeItem(atPath: root)
    }
}
