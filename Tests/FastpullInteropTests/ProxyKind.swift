import FastpullFixtures
import Foundation
import Testing

/// A forward proxy of the interop matrix.
enum ProxyKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case squid
    case tinyproxy

    var testDescription: String { rawValue }

    /// The credentials every proxy test uses for the proxy.
    static let credentials = BasicCredentials(user: "proxyuser", password: "proxy-secret-7")

    /// Starts this proxy, allowing connections to `originPorts`.
    func start(originPorts: [Int]) async throws -> any RealProxy {
        switch self {
        case .squid:
            return try await SquidServer.start(
                options: .init(credentials: Self.credentials, allowedPorts: originPorts))
        case .tinyproxy:
            return try await TinyproxyServer.start(
                options: .init(credentials: Self.credentials, connectPorts: originPorts))
        }
    }
}
