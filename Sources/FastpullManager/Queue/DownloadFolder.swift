import FoundationEssentials
import Glibc

/// The folder a manager saves into, and the rule that keeps every download inside it: a call's `dir`
/// (absolute, or relative to the folder) and `out` must name a place within the folder once `.` and
/// `..` are worked out and the symbolic links that exist are followed, so no caller — a front-end, a
/// script, a page that got the secret — can write `~/.ssh/authorized_keys` through the daemon. A
/// daemon started with `allowsAnyFolder` (aria2's own behaviour) saves wherever it is told.
public struct DownloadFolder: Sendable, Equatable {
    /// The folder, absolute.
    public var path: String
    /// Whether `dir` may name any folder.
    public var allowsAnyFolder: Bool

    /// Downloads into `path` (made absolute against the working folder), and only there unless
    /// `allowsAnyFolder`.
    public init(_ path: String, allowsAnyFolder: Bool = false) {
        self.path = Self.normalized(Self.absolute(path, base: Self.workingFolder))
        self.allowsAnyFolder = allowsAnyFolder
    }

    /// Why a place was refused.
    public struct Outside: Error, CustomStringConvertible, Equatable {
        /// The place asked for.
        public var asked: String
        /// The download folder.
        public var folder: String
        /// `… is outside the download folder …`.
        public var description: String {
            "\(asked) is outside the download folder \(folder); the daemon saves only there (start it with --allow-any-dir to lift this)"
        }
    }

    /// The folder a download with `dir` (nil: the download folder) and `out` is saved in; throws
    /// ``Outside`` when it, or the file, would be outside the download folder.
    public func directory(_ dir: String?, out: String?) throws(Outside) -> String {
        let directory = Self.normalized(Self.absolute(dir ?? path, base: path))
        guard !allowsAnyFolder else { return directory }
        let target = out.map { Self.normalized(Self.absolute($0, base: directory)) } ?? directory
        let root = Self.resolved(path)
        for place in [directory, target] {
            let real = Self.resolved(place)
            guard real == root || real.hasPrefix(root == "/" ? "/" : root + "/") else {
                throw Outside(asked: out.map { place == target ? $0 : place } ?? place, folder: path)
            }
        }
        return directory
    }

    private static var workingFolder: String { FileManager.default.currentDirectoryPath }

    private static func absolute(_ path: String, base: String) -> String {
        path.hasPrefix("/") ? path : base + "/" + path
    }

    /// `path` with `.`, `..` and repeated slashes worked out (lexically).
    static func normalized(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..": _ = parts.popLast()
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// `path` (absolute and normalized) with the symbolic links of its longest existing part followed.
    static func resolved(_ path: String) -> String {
        var existing = path
        var rest: [Substring] = []
        while true {
            if let real = realpath(existing, nil) {
                defer { free(real) }
                let head = String(cString: real)
                return rest.isEmpty ? head : normalized(head + "/" + rest.reversed().joined(separator: "/"))
            }
            guard let slash = existing.lastIndex(of: "/"), existing != "/" else { return path }
            rest.append(existing[existing.index(after: slash)...])
            existing = slash == existing.startIndex ? "/" : String(existing[..<slash])
        }
    }
}
