import FastpullFixtures
import Foundation

/// A test's own working folder for downloads, removed afterwards.
enum InteropFolder {
    /// Creates a folder, runs `body` with its path, and removes the folder, also when `body` throws.
    static func with<T: Sendable>(_ label: String, _ body: (String) async throws -> T) async throws -> T {
        let folder = try ServerFolder.create("client-\(label)")
        do {
            let result = try await body(folder)
            ServerFolder.remove(folder)
            return result
        } catch {
            ServerFolder.remove(folder)
            throw error
        }
    }

    /// What the file at `path` holds compared to `expected`, read and compared off the pool.
    static func compare(_ path: String, to expected: Data) async -> Comparison {
        await OffPool.run {
            guard let data = FileManager.default.contents(atPath: path) else { return .missing }
            return data == expected ? .identical : .different(size: data.count)
        }
    }

    /// The file at `path` against the two versions `old` and `new`, off the pool.
    static func version(_ path: String, old: Data, new: Data) async -> String {
        await OffPool.run {
            guard let data = FileManager.default.contents(atPath: path) else { return "missing" }
            return data == old ? "old" : data == new ? "new" : "mixed"
        }
    }

    /// True when nothing is at `path`.
    static func isAbsent(_ path: String) -> Bool {
        !FileManager.default.fileExists(atPath: path)
    }
}
