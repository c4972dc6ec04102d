import FastpullFixtures
import Foundation
import Testing

/// Through dante's SOCKS5 server: `socks5h://` gives dante the name, `socks5://` the address
/// resolved here; http and https origins alike.
@Suite("fastpull through dante's SOCKS5 proxy")
struct DanteSOCKSTests {
    @Test func namesAndAddressesOverHTTPAndHTTPS() async throws {
        let dante = try await DanteServer.start()
        do {
            try await Origin.nginx.serve { host in
                try await InteropFolder.with("dante") { folder in
                    let data = await TestContent.random(
                        3 * TestContent.mebibyte, seed: TestContent.seed("dante"))
                    let url = try await host.publish("file.bin", data)
                    let port = try #require(URL(string: url)?.port)
                    let named = url.replacingOccurrences(of: "127.0.0.1", with: "localhost")
                    let proxy = "127.0.0.1:\(dante.port)"
                    for (scheme, extra) in [("socks5h", [String]()), ("socks5", ["-4"])] {
                        let output = folder + "/\(scheme).bin"
                        let result = try await FastpullProcess.run(
                            [named, "-o", output, "-n", "4", "--proxy", "\(scheme)://\(proxy)", "-q"] + extra,
                            in: folder)
                        #expect(result.status == 0, "\(scheme): \(result)\n\(dante.log)")
                        #expect(FileManager.default.contents(atPath: output) == data, "\(scheme)")
                    }
                    // What each asked dante for: the name, then the address resolved here.
                    let log = dante.log
                    #expect(
                        log.contains("-> localhost.\(port), clientauth none, srcauth none, command connect"))
                    #expect(
                        log.contains("-> 127.0.0.1.\(port), clientauth none, srcauth none, command connect"))

                    // https: TLS with the origin, its name verified, inside the tunnel.
                    let tls = try #require((host.server as? NginxServer)?.tlsBaseURL)
                    let secure = tls.replacingOccurrences(of: "127.0.0.1", with: "localhost") + "/file.bin"
                    let result = try await FastpullProcess.run(
                        [
                            secure, "-o", folder + "/tls.bin", "--proxy", "socks5h://\(proxy)", "--cacert",
                            FixturePaths.certificatesDirectory + "/ca.pem", "-q",
                        ], in: folder)
                    #expect(result.status == 0, "https: \(result)\n\(dante.log)")
                    #expect(FileManager.default.contents(atPath: folder + "/tls.bin") == data)
                }
            }
        } catch {
            await dante.stop()
            throw error
        }
        await dante.stop()
    }
}
