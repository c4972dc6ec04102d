import CLinux
import FastpullHTTP
import FoundationEssentials
import Glibc

/// What Fastpull records on a file it saved, in two extended attributes: where it came from
/// (`user.xdg.origin.url`, the freedesktop name curl `--xattr` and wget use) and the version it is
/// (`user.fastpull.origin`: its size, modification time when saved, ETag, Last-Modified and SHA-256
/// where computed, one `name: value` line each). A rerun that finds the record and a server still
/// offering that version knows the file is complete and unchanged without fetching it.
///
/// Files saved before the record was one attribute carry one attribute per field
/// (`user.fastpull.size`, `.mtime`, `.etag`, `.last-modified`, `.sha256`): they are read as well.
///
/// Best effort: a file system without user attributes simply keeps no record, and the file is then
/// treated as any file already at the output path.
package struct OriginRecord: Sendable, Equatable {
    /// The URL asked for, with its secrets redacted (``URL/redactedForDisplay``).
    package var url: String
    package var size: Int64
    var etag: String?
    var lastModified: String?
    /// Empty when the download did not compute it.
    package var sha256: String
    /// The file's modification time when it was saved (`seconds.nanoseconds`): a file changed on this
    /// machine since then is no longer what the record describes.
    var modified: String = ""

    static let urlName = "user.xdg.origin.url"
    static let recordName = "user.fastpull.origin"
    /// The attributes of a record written one field each (older files), and removed from a `.part`
    /// kept from then when a record is written on it.
    private static let fieldNames = (
        size: "user.fastpull.size", etag: "user.fastpull.etag", lastModified: "user.fastpull.last-modified",
        sha256: "user.fastpull.sha256", modified: "user.fastpull.mtime"
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

    /// The `user.fastpull.origin` value: `name: value` lines (HTTP field values hold no line breaks).
    var text: String {
        // Appended to one string: written for every file a batch saves.
        var text = "size: " + String(size) + "\nmtime: " + modified
        if let etag { text += "\netag: " + etag }
        if let lastModified { text += "\nlast-modified: " + lastModified }
        if !sha256.isEmpty { text += "\nsha256: " + sha256 }
        return text
    }

    /// The record in a `user.fastpull.origin` value, with `url`; nil unless it has a size and a time.
    init?(url: String, text: String) {
        var fields: [Substring: Substring] = [:]
        for line in text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let value = line[line.index(after: colon)...]
            fields[line[..<colon]] = value.first == " " ? value.dropFirst() : value
        }
        guard let size = fields["size"].flatMap({ Int64($0) }), let modified = fields["mtime"] else {
            return nil
        }
        self.init(
            url: url, size: size, etag: fields["etag"].map(String.init),
            lastModified: fields["last-modified"].map(String.init),
            sha256: fields["sha256"].map(String.init) ?? "")
        self.modified = String(modified)
    }

    /// Writes the record on the open file `descriptor` (before it is renamed into place, so the file
    /// appears with it): two attributes. Returns false where the file system keeps no user
    /// attributes. `fresh`: the file was created by this run, so it carries no attribute of an earlier
    /// one to remove.
    @discardableResult
    func write(to descriptor: Int32, fresh: Bool = false) -> Bool {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return false }
        var record = self
        record.modified = Self.stamp(info.st_mtim)
        for (name, value) in [(Self.urlName, url), (Self.recordName, record.text)] {
            let bytes = Array(value.utf8)
            guard fsetxattr(descriptor, name, bytes, bytes.count, 0) == 0 else { return false }
        }
        // A `.part` kept from an earlier attempt by an older version may carry its fields one by one.
        guard !fresh else { return true }
        let names = Self.fieldNames
        for name in [names.size, names.etag, names.lastModified, names.sha256, names.modified] {
            _ = fremovexattr(descriptor, name)
        }
        return true
    }

    /// The record on the file at `path`, if it has a whole one (in either form).
    package static func read(path: String) -> OriginRecord? {
        func value(_ name: String) -> String? {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = getxattr(path, name, &buffer, buffer.count)
            guard count >= 0 else { return nil }
            return String(decoding: buffer[..<count], as: UTF8.self)
        }
        guard let url = value(urlName) else { return nil }
        if let text = value(recordName) { return OriginRecord(url: url, text: text) }
        let names = fieldNames
        guard let size = value(names.size).flatMap({ Int64($0) }), let modified = value(names.modified) else {
            return nil
        }
        var record = OriginRecord(
            url: url, size: size, etag: value(names.etag), lastModified: value(names.lastModified),
            sha256: value(names.sha256) ?? "")
        record.modified = modified
        return record
    }

    /// Whether the file at `path` is still as it was saved: its size and modification time.
    package static func fileIsAsSaved(_ path: String, record: OriginRecord) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        return Int64(info.st_size) == record.size && stamp(info.st_mtim) == record.modified
    }

    /// Whether `remote`, just probed, is still the version this record describes: the same size, and
    /// the same strong ETag (or, where neither has one, the same `Last-Modified`). Nil when the two
    /// carry no validator in common, so nothing can be told.
    package func describes(_ remote: RemoteFile) -> Bool? {
        describes(size: remote.size, etag: remote.etag, lastModified: remote.lastModified)
    }

    /// ``describes(_:)`` for a file the server describes by these.
    package func describes(size: Int64?, etag remoteETag: String?, lastModified remoteTime: String?) -> Bool?
    {
        if let size, size != self.size { return false }
        if let etag, let remoteETag { return etag == remoteETag }
        if let lastModified, let remoteTime, etag == nil, remoteETag == nil {
            return lastModified == remoteTime
        }
        return nil
    }
}
