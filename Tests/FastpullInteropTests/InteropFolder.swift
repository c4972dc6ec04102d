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

    /// The file at `path` against the two versions `old` and `new` (read off the pool): "old", "new",
    /// "missing", or "mixed: ..." with how many 1 MiB blocks match each version.
    static func version(_ path: String, old: Data, new: Data) async -> String {
        await OffPool.run {
            guard let data = FileManager.default.contents(atPath: path) else { return "missing" }
            if data == old { return "old" }
            if data == new { return "new" }
            guard data.count == old.count else { return "mixed: \(data.count) bytes, not \(old.count)" }
            var counts = (old: 0, new: 0, neither: 0)
            for start in stride(from: 0, to: data.count, by: TestContent.mebibyte) {
                let block = start..<min(start + TestContent.mebibyte, data.count)
                if data[block] == old[block] {
                    counts.old += 1
                } else if data[block] == new[block] {
                    counts.new += 1
                } else {
                    counts.neither += 1
                }
            }
            return
                "mixed: of its 1 MiB blocks \(counts.old) are the old version's, \(counts.new) the new one's, "
                + "\(counts.neither) neither"
        }
    }

    /// True when nothing is at `path`.
    static func isAbsent(_ path: String) -> Bool {
        !FileManager.default.fileExists(atPath: path)
    }
}
