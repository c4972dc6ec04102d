import FastpullFixtures
import Foundation

/// A test's work folder, and a fixture server that also serves a second folder under `/files/`.
struct ServedWorkspace {
    let server: FixtureServer
    /// Where the command runs.
    let folder: String
    /// Served under `/files/`.
    let served: String

    /// Both folders in a new temporary folder named from `label`.
    init(label: String) throws {
        let base = try ScratchFolders.make(label)
        folder = base.appendingPathComponent("work").path
        served = base.appendingPathComponent("served").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: served, withIntermediateDirectories: true)
        var configuration = FixtureServer.Configuration()
        configuration.filesDirectory = served
        server = try FixtureServer(configuration)
    }
}
