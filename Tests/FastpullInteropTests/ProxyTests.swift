import FastpullFixtures
import Foundation
import Testing

@testable import FastpullHTTP

/// Downloads through real proxies with proxy authentication: plain HTTP (absolute-form requests) and
/// HTTPS (a CONNECT tunnel to nginx over TLS). A ``RecordingRelay`` in front of the proxy records what
/// the proxy received; nginx's log shows what the origin received.
@Suite("Downloads through real proxies")
struct ProxyTests {
    static let originCredentials = BasicCredentials(user: "originuser", password: "origin-secret-3")
    static let size = 4 * TestContent.mebibyte + 1

    @Test("plain HTTP through the proxy (absolute-form)", arguments: ProxyKind.allCases)
    func plainHTTP(kind: ProxyKind) async throws {
        try await Self.withProxiedOrigin(kind, originAuth: nil) { nginx, proxy, relay, folder in
            let data = await TestContent.random(
                Self.size, seed: TestContent.seed("proxy-http", kind.rawValue))
            try await Self.place(data, at: nginx.documentRoot + "/via-proxy.bin")
            let url = nginx.baseURL + "/via-proxy.bin"
            // The proxy really demands its credentials: without them it answers 407, an HTTP error.
            let refused = try await FastpullProcess.run(
                [
                    url, "-o", folder + "/refused.bin", "-q", "--retries", "0", "--proxy",
                    proxy.proxyURL(withCredentials: false, port: relay.port),
                ], in: folder)
            #expect(refused.status == 4, "\(kind): without proxy credentials: \(refused)")
            let proxyMark = await proxy.accessLog.mark()
            let originMark = await nginx.accessLog.mark()
            let output = folder + "/via-proxy.bin"
            let result = try await FastpullProcess.run(
                [url, "-o", output, "-n", "4", "-q", "--proxy", proxy.proxyURL(port: relay.port)], in: folder)
            #expect(result.status == 0, "\(kind): \(result)")
            let comparison = await InteropFolder.compare(output, to: data)
            #expect(comparison == .identical, "\(kind): \(comparison)")

            let proxied = try await proxy.accessLog.waitForEntries { entries in
                entries.contains { $0.method == "GET" && $0.target == url }
            }
            #expect(
                !proxied.contains { $0.method == "GET" && $0.target != url },
                "\(kind): the proxy logged other requests:\n\(Self.lines(proxied))")
            let origin = try await nginx.accessLog.waitForEntries { entries in
                entries.contains { $0.method == "GET" && $0.path == "/via-proxy.bin" }
            }
            #expect(
                origin.allSatisfy { $0.headers["proxy-authorization"] == nil },
                "\(kind): the origin received Proxy-Authorization:\n\(Self.lines(origin))")
            let wire = relay.clientText
            #expect(
                wire.localizedCaseInsensitiveContains(
                    "Proxy-Authorization: \(ProxyKind.credentials.headerValue)"),
                "\(kind): fastpull sent no Proxy-Authorization with the proxy's credentials")
            #expect(
                wire.contains("GET \(url) HTTP/1.1"),
                "\(kind): no absolute-form GET reached the proxy:\n\(wire)")
            // Every request at the origin came through the proxy: the proxy (which caches nothing)
            // logged at least as many of each method for the file, and the relay saw every
            // connection. It may log more: a request the client cut (a steal ends a window early)
            // before the proxy forwarded it never reaches the origin.
            let allAtOrigin = await nginx.accessLog.entries(since: originMark)
            let allProxied = await proxy.accessLog.entries(since: proxyMark)
            for method in ["HEAD", "GET"] {
                let viaProxy = allProxied.count { $0.method == method && $0.target == url }
                let atOrigin = allAtOrigin.count { $0.method == method && $0.path == "/via-proxy.bin" }
                #expect(
                    atOrigin <= viaProxy,
                    "\(kind): \(atOrigin) \(method) requests at the origin, \(viaProxy) through the proxy:\n\(Self.lines(allAtOrigin))"
                )
            }
            #expect(relay.connectionCount >= 2, "\(kind): \(relay.connectionCount) connections to the proxy")
        }
    }

    @Test("HTTPS through a CONNECT tunnel; credentials stay with their hop", arguments: ProxyKind.allCases)
    func httpsThroughConnect(kind: ProxyKind) async throws {
        try await Self.withProxiedOrigin(kind, originAuth: Self.originCredentials) {
            nginx, proxy, relay, folder in
            let data = await TestContent.random(
                Self.size, seed: TestContent.seed("proxy-https", kind.rawValue))
            try await Self.place(data, at: nginx.documentRoot + "/tunnel.bin")
            let url = nginx.tlsBaseURL + "/tunnel.bin"
            let output = folder + "/tunnel.bin"
            let result = try await FastpullProcess.run(
                [
                    url, "-o", output, "-n", "4", "-q", "--proxy", proxy.proxyURL(port: relay.port),
                    "--cacert", FixturePaths.certificatesDirectory + "/ca.pem",
                    "-u", Self.originCredentials.userInfo,
                ],
                in: folder)
            #expect(result.status == 0, "\(kind): \(result)")
            let comparison = await InteropFolder.compare(output, to: data)
            #expect(comparison == .identical, "\(kind): \(comparison)")

            let authority = "127.0.0.1:\(nginx.tlsPort)"
            let proxied = try await proxy.accessLog.waitForEntries { entries in
                entries.contains { $0.method == "CONNECT" && $0.target == authority }
            }
            #expect(
                proxied.allSatisfy { $0.method == "CONNECT" && $0.headers["authorization"] == nil },
                "\(kind): the proxy saw more than CONNECTs, or an Authorization header:\n\(Self.lines(proxied))"
            )
            let origin = try await nginx.accessLog.waitForEntries { entries in
                entries.contains { $0.method == "GET" && $0.path == "/tunnel.bin" && $0.status == 206 }
            }
            #expect(
                origin.allSatisfy { $0.headers["proxy-authorization"] == nil },
                "\(kind): the origin received Proxy-Authorization:\n\(Self.lines(origin))")
            #expect(
                origin.allSatisfy { $0.headers["authorization"] == Self.originCredentials.headerValue },
                "\(kind): a request reached the origin without its credentials:\n\(Self.lines(origin))")
            let wire = relay.clientText
            #expect(wire.contains("CONNECT \(authority) HTTP/1.1"), "\(kind): no CONNECT reached the proxy")
            #expect(
                wire.localizedCaseInsensitiveContains(
                    "Proxy-Authorization: \(ProxyKind.credentials.headerValue)"),
                "\(kind): the CONNECT carried no Proxy-Authorization with the proxy's credentials")
            // Every connection to the origin is a tunnel through the proxy: at least as many CONNECTs
            // as connections the origin served (one opened directly would be one more), each a
            // connection of its own to the relay.
            let tunnels = await proxy.accessLog.entries().count {
                $0.method == "CONNECT" && $0.target == authority
            }
            let originConnections = Set(await nginx.accessLog.entries().compactMap(\.connection)).count
            #expect(
                originConnections >= 1 && tunnels >= originConnections,
                "\(kind): \(originConnections) connections at the origin, \(tunnels) tunnels:\n\(Self.lines(origin))"
            )
            #expect(
                relay.connectionCount >= tunnels, "\(kind): \(relay.connectionCount) connections to the proxy"
            )
            let originSecret = Self.originCredentials.headerValue.dropFirst("Basic ".count)
            #expect(
                !wire.contains(originSecret) && !wire.contains(Self.originCredentials.user),
                "\(kind): the proxy received the origin's credentials outside the TLS tunnel")
        }
    }

    /// Requests sent ahead through the proxy (`--pipelining on`; 16 MiB over two connections at
    /// 8 MiB/s in all, in pieces of 8 MiB): the bytes are identical whatever the proxy does with a
    /// request that comes before the answer to the one before it. It answers it on the same
    /// connection, or says it closes, or leaves it unanswered and the download sends no more.
    @Test("requests sent ahead through the proxy", arguments: ProxyKind.allCases)
    func pipelined(kind: ProxyKind) async throws {
        try await Self.withProxiedOrigin(kind, originAuth: nil) { nginx, proxy, relay, folder in
            let size = 16 * TestContent.mebibyte
            let data = await TestContent.random(
                size, seed: TestContent.seed("proxy-pipelined", kind.rawValue))
            try await Self.place(data, at: nginx.documentRoot + "/pipelined.bin")
            let output = folder + "/pipelined.bin"
            let trace = folder + "/trace.jsonl"
            let result = try await FastpullProcess.run(
                [
                    nginx.baseURL + "/pipelined.bin", "-o", output, "-q", "-n", "2", "--min-segment", "8MiB",
                    "--limit-rate", "8MiB/s", "--pipelining", "on", "--trace", trace, "--proxy",
                    proxy.proxyURL(port: relay.port),
                ], in: folder)
            #expect(result.status == 0, "\(kind): \(result)")
            let comparison = await InteropFolder.compare(output, to: data)
            #expect(comparison == .identical, "\(kind): \(comparison)")
            let events = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").compactMap
            {
                (try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["event"] as? String
            }
            let sent = events.count { $0 == "request ahead" }
            #expect(sent >= 1, "\(kind): no request was sent ahead: \(Set(events))")
        }
    }

    /// Starts nginx (requiring `originAuth` when given), the proxy allowing nginx's ports, and a relay in
    /// front of the proxy; runs `body`; stops everything.
    private static func withProxiedOrigin(
        _ kind: ProxyKind, originAuth: BasicCredentials?,
        _ body: (NginxServer, any RealProxy, RecordingRelay, String) async throws -> Void
    ) async throws {
        let root = try ServerFolder.create("docroot-proxy-\(kind.rawValue)")
        defer { ServerFolder.remove(root) }
        let nginx = try await NginxServer.start(documentRoot: root, options: .init(basicAuth: originAuth))
        try await nginx.run { nginx in
            let proxy = try await kind.start(originPorts: [nginx.port, nginx.tlsPort])
            try await proxy.run { proxy in
                let relay = try RecordingRelay(upstreamPort: proxy.port)
                defer { relay.stop() }
                try await InteropFolder.with("proxy-\(kind.rawValue)") { folder in
                    try await body(nginx, proxy, relay, folder)
                }
            }
        }
    }

    /// Writes `data` to `path` (an hour old, like every published file), off the pool.
    private static func place(_ data: Data, at path: String) async throws {
        try await OffPool.run {
            try data.write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(-3600)], ofItemAtPath: path)
        }
    }

    private static func lines(_ entries: [AccessLogEntry]) -> String {
        entries.map(\.description).joined(separator: "\n")
    }
}
