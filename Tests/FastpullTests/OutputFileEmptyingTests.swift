import Foundation
import Glibc
import Testing

@testable import Fastpull

/// Emptying a `.part` file before a stream writes it from byte 0: skipped only where the file is known
/// to be empty, never where bytes of an earlier run or an earlier try are in it.
@Suite("OutputFile.empty")
struct OutputFileEmptyingTests {
    let folder: String

    init() throws {
        folder =
            FileManager.default.temporaryDirectory.appendingPathComponent("empty-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    func write(_ text: String, to file: OutputFile, at offset: Int64 = 0) throws {
        try Array(text.utf8).withUnsafeBytes { try file.write($0, at: offset) }
    }

    @Test func aPartKeptFromAnEarlierRunIsEmptied() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/out.bin.part"
        try "bytes of an earlier run".write(toFile: path, atomically: false, encoding: .utf8)
        let part = try OutputFile(claiming: path)
        #expect(!part.wasCreated)
        try part.empty()
        #expect(try part.size() == 0)
    }

    @Test func aCreatedPartIsEmptiedAgainOnceWritten() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let part = try OutputFile(claiming: folder + "/out.bin.part")
        #expect(part.wasCreated)
        try part.empty()
        #expect(try part.size() == 0)
        // A first try wrote some bytes; the next try starts from an empty file again.
        try write("first try", to: part)
        try part.empty()
        #expect(try part.size() == 0)
        // Sized (preallocated, or truncated to a length), it is no longer known to be empty either.
        try part.truncate(to: 0)
        try part.preallocate(size: 4096)
        try part.empty()
        #expect(try part.size() == 0)
        try part.truncate(to: 10)
        try part.empty()
        #expect(try part.size() == 0)
    }

    @Test func aPartClaimedNewIsWrittenWithBlockingWrites() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let created = try OutputFile(claiming: folder + "/new.bin.part")
        try "kept".write(toFile: folder + "/kept.bin.part", atomically: false, encoding: .utf8)
        let kept = try OutputFile(claiming: folder + "/kept.bin.part")
        for file in [created, kept] {
            #expect(file.statusFlags & O_NONBLOCK == 0)
            #expect(file.statusFlags & O_ACCMODE == O_RDWR)
        }
    }
}
