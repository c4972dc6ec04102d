import Foundation

/// Where the fixture files checked into the repository live.
public enum FixturePaths {
    /// The absolute path of the repository's `Fixtures/certs` folder (test CA, server certificates).
    ///
    /// Found by walking up from this source file's compile-time path (`#filePath`) to the first folder
    /// that holds `Fixtures/certs/ca.pem`, so it works for `swift test` and `swift run` from any working
    /// directory as long as the checkout still exists. The environment variable
    /// `FASTPULL_FIXTURE_CERTS` overrides it; if neither finds the folder, the result is
    /// `Fixtures/certs` under the current directory.
    public static var certificatesDirectory: String {
        if let override = ProcessInfo.processInfo.environment["FASTPULL_FIXTURE_CERTS"], !override.isEmpty {
            return override
        }
        if let found = findUpwards(from: #filePath, relativePath: "Fixtures/certs", marker: "ca.pem") {
            return found
        }
        return FileManager.default.currentDirectoryPath + "/Fixtures/certs"
    }

    /// Walks up from the folder of `file` looking for `<ancestor>/<relativePath>/<marker>`.
    static func findUpwards(from file: String, relativePath: String, marker: String) -> String? {
        var directory = (file as NSString).deletingLastPathComponent
        while !directory.isEmpty {
            let candidate = (directory as NSString).appendingPathComponent(relativePath)
            if FileManager.default.fileExists(atPath: (candidate as NSString).appendingPathComponent(marker))
            {
                return candidate
            }
            let parent = (directory as NSString).deletingLastPathComponent
            if parent == directory { return nil }
            directory = parent
        }
        return nil
    }
}
