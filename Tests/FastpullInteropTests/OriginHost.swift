import FastpullFixtures
import Foundation

@testable import FastpullHTTP

/// A running origin that tests put files on and download them from.
protocol OriginHost: Sendable {
    /// Which origin this is.
    var origin: Origin { get }
    /// The server, for its access log.
    var server: any RealServer { get }
    /// Makes `data` available as `name`, last modified at `modified` where the origin lets us choose
    /// (file servers; an S3 object is modified when it is put), and returns the URL to download it from.
    func publish(_ name: String, _ data: Data, modified: Date) async throws -> String
    /// Replaces `name` atomically with `data` (rename over it; a new PUT for S3): a request sees either
    /// the old or the new bytes, never a mix.
    func replace(_ name: String, with data: Data) async throws
    /// Stops the server and removes the documents.
    func stop() async
}

extension OriginHost {
    /// Publishes `data` as `name`, last modified an hour ago: old enough for every server to treat its
    /// validators as strong (Apache's 60-second rule does not apply).
    func publish(_ name: String, _ data: Data) async throws -> String {
        try await publish(name, data, modified: Date().addingTimeInterval(-3600))
    }
}
