import CLinux
import Foundation
import Glibc
import Testing

@testable import Fastpull
@testable import FastpullEngine

/// The origin record a saved file carries: two attributes now, and the one-attribute-a-field form of
/// files saved before, read alike.
@Suite("OriginRecord")
struct OriginRecordTests {
    /// A file in a fresh temporary folder (tmpfs keeps user attributes).
    private static func withFile(_ body: (String, Int32) throws -> Void) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "origin-\(UUID().uuidString)"
        ).path
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        #expect(fd >= 0)
        defer {
            close(fd)
            unlink(path)
        }
        _ = "0123456789".withCString { write(fd, $0, 10) }
        try body(path, fd)
    }

    private static func names(_ path: String) -> [String] {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = listxattr(path, &buffer, buffer.count)
        guard count > 0 else { return [] }
        return buffer[..<count].split(separator: 0).map {
            String(decoding: $0.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    @Test func aRecordIsTwoAttributesAndReadsBackWhole() throws {
        try Self.withFile { path, fd in
            let record = OriginRecord(
                url: "https://example.org/a.bin", size: 10, etag: "\"abc\"",
                lastModified: "Fri, 04 Dec 2026 20:56:00 GMT",
                sha256: String(repeating: "ab", count: 32))
            guard record.write(to: fd, fresh: true) else { return }  // no user attributes here
            #expect(Self.names(path).sorted() == ["user.fastpull.origin", "user.xdg.origin.url"])
            let read = try #require(OriginRecord.read(path: path))
            #expect(read.url == record.url)
            #expect(read.size == 10)
            #expect(read.etag == "\"abc\"")
            #expect(read.lastModified == "Fri, 04 Dec 2026 20:56:00 GMT")
            #expect(read.sha256 == record.sha256)
            #expect(OriginRecord.fileIsAsSaved(path, record: read))
        }
    }

    /// A `.part` from an older version carries one attribute a field: it is still read, and a record
    /// written over it leaves only the two.
    @Test func theOlderFormIsReadAndReplaced() throws {
        try Self.withFile { path, fd in
            var info = stat()
            #expect(fstat(fd, &info) == 0)
            let fields = [
                ("user.xdg.origin.url", "https://example.org/b.bin"), ("user.fastpull.size", "10"),
                ("user.fastpull.mtime", OriginRecord.stamp(info.st_mtim)), ("user.fastpull.etag", "\"old\""),
                ("user.fastpull.sha256", "cd"),
            ]
            for (name, value) in fields {
                guard fsetxattr(fd, name, Array(value.utf8), value.utf8.count, 0) == 0 else { return }
            }
            let read = try #require(OriginRecord.read(path: path))
            #expect(
                read.size == 10 && read.etag == "\"old\"" && read.sha256 == "cd" && read.lastModified == nil)
            #expect(OriginRecord.fileIsAsSaved(path, record: read))

            let newer = OriginRecord(
                url: "https://example.org/b.bin", size: 10, etag: nil,
                lastModified: "Thu, 03 Dec 2026 10:00:00 GMT",
                sha256: "")
            #expect(newer.write(to: fd, fresh: false))
            #expect(Self.names(path).sorted() == ["user.fastpull.origin", "user.xdg.origin.url"])
            let again = try #require(OriginRecord.read(path: path))
            #expect(again.etag == nil && again.sha256 == "" && again.lastModified == newer.lastModified)
        }
    }

    /// A value without a size or a time is no record.
    @Test func aRecordWithoutSizeOrTimeIsNone() {
        #expect(OriginRecord(url: "u", text: "mtime: 1.2") == nil)
        #expect(OriginRecord(url: "u", text: "size: 10") == nil)
        #expect(OriginRecord(url: "u", text: "size: ten\nmtime: 1.2") == nil)
        #expect(OriginRecord(url: "u", text: "size: 10\nmtime: 1.2")?.size == 10)
    }
}
