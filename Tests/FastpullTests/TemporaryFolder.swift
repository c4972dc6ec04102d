import Foundation

/// A new, empty folder of its own in the temporary folder, for a test's files.
enum TemporaryFolder {
    /// Creates `<tmp>/<prefix>-<UUID>` and returns its path.
    static func make(_ prefix: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "\(prefix)-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
