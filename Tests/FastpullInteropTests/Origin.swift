import FastpullFixtures
import Foundation
import Testing

@testable import FastpullHTTP

/// An origin server of the interop matrix.
enum Origin: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case nginx
    case lighttpd
    case apache2
    /// Apache without ETags (`FileETag None`): validation by `Last-Modified` dates only.
    case apache2NoETag = "apache2-no-etag"
    case h2o
    /// moto's S3 server, downloaded from through presigned URLs.
    case s3 = "moto-s3"

    var testDescription: String { rawValue }

    /// Starts this origin with a fresh document root (or bucket), runs `body`, and stops the server
    /// and removes the documents afterwards, also when `body` throws.
    func serve<T: Sendable>(_ body: (any OriginHost) async throws -> T) async throws -> T {
        let host: any OriginHost
        switch self {
        case .s3:
            host = try await S3Host.start()
        default:
            host = try await FileServerHost.start(self)
        }
        do {
            let result = try await body(host)
            await host.stop()
            return result
        } catch {
            await host.stop()
            throw error
        }
    }
}
