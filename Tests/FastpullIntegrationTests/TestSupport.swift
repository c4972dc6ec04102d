import FastpullFixtures
import Foundation

@testable import Fastpull

/// A fresh temporary folder, removed when the value is deinitialised.
final class TemporaryFolder: Sendable {
    let path: String

    init() {
        path =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("fastpull-test-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func url(_ name: String) -> URL { URL(fileURLWithPath: path).appendingPathComponent(name) }

    /// The names of everything in the folder, sorted.
    var contents: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted() }
}

/// Expected digests of fixture content.
enum Expected {
    static func sha256(size: Int, seed: UInt64 = 1) -> String {
        let digest = Digest(.sha256)
        digest.update(FixtureContent.bytes(count: size, seed: seed))
        return Digest.hex(digest.finalize())
    }

    static func sha256(ofFile url: URL) throws -> String {
        let digest = Digest(.sha256)
        digest.update([UInt8](try Data(contentsOf: url)))
        return Digest.hex(digest.finalize())
    }
}

extension Configuration {
    /// Fast retries, so failure tests finish quickly.
    /// Tests run side by side in one process, all against 127.0.0.1: the process-wide per-host
    /// limit is raised so that it does not decide how many connections a test gets.
    static func quickRetries(_ retries: Int = 5, connections: Int = 8) -> Configuration {
        var configuration = Configuration(
            connections: .fixed(connections), retries: retries, retryBaseDelay: .milliseconds(5))
        configuration.maximumConnectionsPerHost = 1000
        return configuration
    }
}

/// Runs `body` with `error` cast to FastpullError, failing otherwise.
func fastpullError(_ error: any Error) -> FastpullError? { error as? FastpullError }
