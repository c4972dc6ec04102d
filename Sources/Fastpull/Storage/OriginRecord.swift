import CLinux
import FoundationEssentials
import Glibc

/// What Fastpull records on a file it saved, in extended attributes: where it came from
/// (`user.xdg.origin.url`, the freedesktop name curl `--xattr` and wget use) and the version it is
/// (`user.fastpull.size`, `.etag`, `.last-modified`, and `.sha256` where it was computed). A rerun
/// that finds the record and a server still offering that version knows the file is complete and
/// unchanged without fetching it.
///
/// Best effort: a file system without user attributes simply keeps no record, and the file is then
/// treated as any file already at the output path.
struct OriginRecord: Sendable, Equatable {
    /// The URL asked for, with its secrets redacted (``URL/redactedForDisplay``).
    var url: String
    var size: Int64
    var etag: String?
    var lastModified: String?
    /// Empty when the download did not compute it.
    var sha256: String
    /// The file's modification time when it was saved (`seconds.nanoseconds`): a file changed on this
    /// machine since then is no longer what the record describes.
    var modified: String = ""

    private static let names = (
        url: "user.xdg.origin.url", size: "user.fastpull.size", etag: "user.fastpull.etag",
        lastModified: "user.fastpull.last-modified", sha256: "user.fastpull.sha256",
        modified: "user.fastpull.mtime"
    )

    /// `seconds.nanoseconds` of a modification time.
    static func stamp(_ time: timespec) -> String { "\(time.tv_sec).\(time.tv_nsec)" }

    /// The record of a download of `url` that saved `remote`'s version with this `sha256`.
    init(url: URL, remote: RemoteFile, size: Int64, sha256: String) {
        self.url = url.redactedForDisplay
        self.size = size
        etag = remote.etag
        lastModified = remote.lastModified
        self.sha256 = sha256
    }

    init(url: String, size: Int64, etag: String?, lastModified: String?, sha256: String) {
        self.url = url
        self.size = size
        self.etag = etag
        self.lastModified = lastModified
        self.sha256 = sha256
    }

    /// Writes the record on the open file `descriptor` (before it is renamed into place, so the file
    /// appears with it). Returns false where the file system keeps no user attributes. `fresh`: the
    /// file was created by this run, so it carries no attribute of an earlier one to remove.
    @discardableResult
    func write(to descriptor: Int32, fresh: Bool = false) -> Bool {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return false }
        var values: [(String, String)] = [
            (Self.names.url, url), (Self.names.size, String(size)),
            (Self.names.modified, Self.stamp(info.st_mtim)),
        ]
        if !sha256.isEmpty { values.append((Self.names.sha256, sha256)) }
        if let etag { values.append((Self.names.etag, etag)) }
        if let lastModified { values.append((Self.names.lastModified, lastModified)) }
        for (name, value) in values {
            let bytes = Array(value.utf8)
            guard fsetxattr(descriptor, name, bytes, bytes.count, 0) == 0 else { return false }
        }
        // A field this version does not have goes: a `.part` kept from an earlier attempt may carry
        // the last version's.
        guard !fresh else { return true }
        let absent = [
            sha256.isEmpty ? Self.names.sha256 : nil, etag == nil ? Self.names.etag : nil,
            lastModified == nil ? Self.names.lastModified : nil,
        ]
        for name in absent.compactMap({ $0 }) { _ = fremovexattr(descriptor, name) }
        return true
    }

    /// The record on the file at `path`, if it has a whole one.
    static func read(path: String) -> OriginRecord? {
        func value(_ name: String) -> String? {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = getxattr(path, name, &buffer, buffer.count)
            guard count >= 0 else { return nil }
            return String(decoding: buffer[..<count], as: UTF8.self)
        }
        guard let url = value(names.url), let size = value(names.size).flatMap({ Int64($0) }),
            let modified = value(names.modified)
        else { return nil }
        var record = OriginRecord(
            url: url, size: size, etag: value(names.etag), lastModified: value(names.lastModified),
            sha256: value(names.sha256) ?? "")
        record.modified = modified
        return record
    }

    /// Whether the file at `path` is still as it was saved: its size and modification time.
    static func fileIsAsSaved(_ path: String, record: OriginRecord) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        return Int64(info.st_size) == record.size && stamp(info.st_mtim) == record.modified
    }

    /// Whether `remote`, just probed, is still the version this record describes: the same size, and
    /// the same strong ETag (or, where neither has one, the same `Last-Modified`). Nil when the two
    /// carry no validator in common, so nothing can be told.
    func describes(_ remote: RemoteFile) -> Bool? {
        if let size = remote.size, size != self.size { return false }
        if let etag, let current = remote.etag { return etag == current }
        if let lastModified, let current = remote.lastModified, etag == nil, remote.etag == nil {
            return lastModified == current
        }
        return nil
    }
}
