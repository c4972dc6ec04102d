import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Temporary folders for real servers and their documents.
///
/// A server's own folder (configuration, logs, pid file) is writable by everyone: nginx workers, h2o,
/// squid and apache drop root privileges to `nobody` or `proxy` and still write there. A document root is
/// readable by everyone for the same reason.
public enum ServerFolder {
    /// Creates a new folder `/tmp/fastpull-interop-<label>-<random>` with `permissions` and returns its
    /// path.
    public static func create(_ label: String, permissions: mode_t = 0o755) throws -> String {
        let base = NSTemporaryDirectory().isEmpty ? "/tmp" : NSTemporaryDirectory()
        var template = Array(
            ((base as NSString).appendingPathComponent("fastpull-interop-\(label)-XXXXXX")).utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw RealServerError("mkdtemp for \(label): \(String(cString: strerror(errno)))")
        }
        let path = String(cString: made)
        // chmod, not mkdir's mode: the umask would take the group and other write bits off.
        guard chmod(path, permissions) == 0 else {
            throw RealServerError("chmod \(path): \(String(cString: strerror(errno)))")
        }
        return path
    }

    /// Creates a folder as ``create(_:permissions:)`` does and returns what `body` returns for its path;
    /// when `body` throws, removes the folder and rethrows. A server's `start` runs in one, so a start
    /// that fails leaves no folder behind.
    static func creating<T>(
        _ label: String, permissions: mode_t, _ body: (String) async throws -> T
    ) async throws -> T {
        let folder = try create(label, permissions: permissions)
        do {
            return try await body(folder)
        } catch {
            remove(folder)
            throw error
        }
    }

    /// Removes `path` and everything in it, unless `FASTPULL_KEEP_SERVER_FOLDERS` is set (to look at a
    /// failed run's configuration and logs).
    public static func remove(_ path: String) {
        if let keep = ProcessInfo.processInfo.environment["FASTPULL_KEEP_SERVER_FOLDERS"], !keep.isEmpty {
            return
        }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Writes `text` to `path` (created or replaced), readable by everyone.
    static func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o644)
    }

    /// The last `lines` lines of the text file at `path`, or "" when it cannot be read.
    static func tail(of path: String, lines: Int = 25) -> String {
        guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else { return "" }
        let text = String(decoding: data, as: UTF8.self)
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines)
            .joined(separator: "\n")
    }
}
