import Foundation
import Synchronization

/// Temporary folders the command-line tests work in, removed when the test process exits: a suite's
/// values go away after each test, but the folder must outlive the values that only name it.
enum ScratchFolders {
    private static let made: Mutex<[URL]> = {
        atexit {
            for folder in ScratchFolders.made.withLock({ $0 }) {
                try? FileManager.default.removeItem(at: folder)
            }
        }
        return Mutex([])
    }()

    /// A new, empty folder named `label-UUID` in the temporary directory.
    static func make(_ label: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        made.withLock { $0.append(folder) }
        return folder
    }
}
