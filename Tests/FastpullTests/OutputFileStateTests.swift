import CLinux
import Foundation
import Glibc
import Testing

@testable import Fastpull
@testable import FastpullEngine

/// Emptying a `.part` file before a stream writes it from byte 0: skipped only where the file is known
/// to be empty, never where bytes of an earlier run or an earlier try are in it.
@Suite("OutputFile.empty")
struct OutputFileEmptyingTests {
    let folder: String

    init() throws {
        folder = try TemporaryFolder.make("empty")
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
        #expect(part.isKnownEmpty)
        try part.empty()
        #expect(try part.size() == 0)
        // A first try wrote some bytes; the next try starts from an empty file again.
        try write("first try", to: part)
        #expect(!part.isKnownEmpty)
        try part.empty()
        #expect(part.isKnownEmpty)
        #expect(try part.size() == 0)
        // Sized (preallocated, or truncated to a length), it is no longer known to be empty either.
        try part.preallocate(size: 4096)
        #expect(!part.isKnownEmpty)
        try part.empty()
        #expect(try part.size() == 0)
        try part.truncate(to: 10)
        #expect(!part.isKnownEmpty)
        try part.empty()
        #expect(try part.size() == 0)
    }

    @Test func bytesSplicedInAreEmptiedToo() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let part = try OutputFile(claiming: folder + "/out.bin.part")
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        let bytes = Array("spliced".utf8)
        #expect(Glibc.write(ends[1], bytes, bytes.count) == bytes.count)
        guard case .success = part.splice(fromPipe: ends[0], count: bytes.count, at: 0) else {
            Issue.record("splice into the temporary folder failed")
            return
        }
        #expect(try part.size() == Int64(bytes.count))
        #expect(!part.isKnownEmpty)
        try part.empty()
        #expect(try part.size() == 0)
    }

    @Test func aKeptEmptyPartIsKnownEmptyAndAKeptFullOneIsNot() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(FileManager.default.createFile(atPath: folder + "/empty.bin.part", contents: Data()))
        let empty = try OutputFile(claiming: folder + "/empty.bin.part")
        #expect(!empty.wasCreated && empty.isKnownEmpty)
        try "bytes".write(toFile: folder + "/full.bin.part", atomically: false, encoding: .utf8)
        let full = try OutputFile(claiming: folder + "/full.bin.part")
        #expect(!full.wasCreated && !full.isKnownEmpty)
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

/// Where a file lives in memory (tmpfs, ramfs) nothing survives a restart, so neither the file nor
/// its folder is synced there; on a disk both are.
@Suite("OutputFile.isInMemory")
struct OutputFileMemoryTests {
    /// The folders looked at: `/dev/shm` (tmpfs where it exists) and the temporary folder (a disk on
    /// this project's machines), each judged against the type `statfs(2)` reports for it.
    static let folders =
        (FileManager.default.fileExists(atPath: "/dev/shm") ? ["/dev/shm"] : [])
        + [FileManager.default.temporaryDirectory.path]

    static func isMemory(_ folder: String) -> Bool {
        var volume = statfs()
        guard statfs(folder, &volume) == 0 else { return false }
        return volume.f_type == 0x0102_1994 || volume.f_type == 0x8584_58f6
    }

    @Test(arguments: folders) func theFileSystemIsToldRight(folder: String) throws {
        let path = folder + "/memory-\(UUID().uuidString).part"
        defer { unlink(path) }
        let file = try OutputFile(claiming: path)
        #expect(file.isInMemory == Self.isMemory(folder))
        // Learnt from the room check as well, with the same answer.
        let checked = try OutputFile(claiming: path + "2")
        defer { unlink(path + "2") }
        try checked.checkRoom(for: 1, empty: true)
        #expect(checked.isInMemory == Self.isMemory(folder))
    }

    @Test(arguments: folders) func aFileIsPlacedWhereverItLives(folder: String) throws {
        let path = folder + "/placed-\(UUID().uuidString)"
        defer { unlink(path) }
        let file = try OutputFile(claiming: path + ".part")
        try Array("bytes".utf8).withUnsafeBytes { try file.write($0, at: 0) }
        try file.sync()
        try file.place(at: path, replacing: false)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "bytes")
        #expect(access(path + ".part", F_OK) != 0)
    }
}
