import Foundation
import Glibc
import Testing

@testable import Fastpull
@testable import FastpullEngine

/// Moving a finished file to its name: what is there decides, whether or not it is looked up first.
@Suite("OutputFile.place")
struct OutputPlacementTests {
    let folder: String

    init() throws {
        folder = try TemporaryFolder.make("place")
    }

    func part(_ bytes: String = "new") throws -> OutputFile {
        let file = try OutputFile(creatingAt: folder + "/out.bin.part")
        try Array(bytes.utf8).withUnsafeBytes { try file.write($0, at: 0) }
        return file
    }

    func contents(_ name: String) -> String? {
        try? String(contentsOfFile: folder + "/" + name, encoding: .utf8)
    }

    @Test func namesAreJoinedToFoldersAsText() {
        #expect(FileSystem.join("/tmp/out", "a.bin") == "/tmp/out/a.bin")
        #expect(FileSystem.join("/tmp/out/", "a.bin") == "/tmp/out/a.bin")
        #expect(FileSystem.join("/", "a.bin") == "/a.bin")
        #expect(FileSystem.join("", "a.bin") == "a.bin")
        #expect(FileSystem.join("out", "a b.bin") == "out/a b.bin")
    }

    @Test func aFreeNameTakesTheFile() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try part().place(at: folder + "/out.bin", replacing: false)
        #expect(contents("out.bin") == "new")
        #expect(!FileManager.default.fileExists(atPath: folder + "/out.bin.part"))
    }

    @Test func aFileThatAppearedStaysUnlessReplacing() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "old".write(toFile: folder + "/out.bin", atomically: false, encoding: .utf8)
        #expect(throws: PlacementError.appeared(folder + "/out.bin")) {
            try part().place(at: folder + "/out.bin", replacing: false)
        }
        #expect(contents("out.bin") == "old")
        #expect(contents("out.bin.part") == "new")
        try part().place(at: folder + "/out.bin", replacing: true)
        #expect(contents("out.bin") == "new")
    }

    /// A `.part` that another program replaced during the download (another download saved under that
    /// very name) is never moved to the name: those are someone else's bytes.
    @Test func aPartReplacedDuringTheDownloadIsNeverPlaced() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let mine = try part("mine")
        try "theirs".write(toFile: folder + "/other", atomically: false, encoding: .utf8)
        #expect(rename(folder + "/other", folder + "/out.bin.part") == 0)
        for replacing in [false, true] {
            #expect(throws: PlacementError.replaced(folder + "/out.bin.part")) {
                try mine.place(at: folder + "/out.bin", replacing: replacing)
            }
        }
        #expect(contents("out.bin") == nil)
        #expect(contents("out.bin.part") == "theirs")
        // Removed, the same.
        #expect(unlink(folder + "/out.bin.part") == 0)
        #expect(throws: PlacementError.replaced(folder + "/out.bin.part")) {
            try mine.place(at: folder + "/out.bin", replacing: false)
        }
    }

    /// A file another download is writing (its `.part`, locked) is never replaced, even when replacing
    /// is asked for: a download named `out.bin.part` must not take the place of another's `.part`.
    @Test func aFileAnotherDownloadWritesIsNeverReplaced() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let named = try OutputFile(creatingAt: folder + "/out.bin.part.part")
        try Array("mine".utf8).withUnsafeBytes { try named.write($0, at: 0) }
        do {
            let writing = try OutputFile(claiming: folder + "/out.bin.part")
            try Array("theirs".utf8).withUnsafeBytes { try writing.write($0, at: 0) }
            #expect(throws: PlacementError.inUse(folder + "/out.bin.part")) {
                try named.place(at: folder + "/out.bin.part", replacing: true)
            }
            #expect(contents("out.bin.part") == "theirs")
            #expect(writing.isStillAtPath)
        }
        // Once that download lets go (its file closed), the name can be replaced as asked.
        try named.place(at: folder + "/out.bin.part", replacing: true)
        #expect(contents("out.bin.part") == "mine")
    }

    /// Nor is the journal of a `.part` another download writes, there or not yet: that download
    /// rewrites it and removes it when it finishes (a download named `out.bin.part.fastpull` said
    /// "complete", and its file was gone).
    @Test(arguments: [".part.fastpull", ".part.fastpull-live"])
    func theJournalOfAnotherDownloadIsNeverTaken(suffix: String) throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let named = try OutputFile(creatingAt: folder + "/out.bin" + suffix + ".part")
        do {
            let writing = try OutputFile(claiming: folder + "/out.bin.part")
            for replacing in [false, true] {
                #expect(throws: PlacementError.inUse(folder + "/out.bin" + suffix)) {
                    try named.place(at: folder + "/out.bin" + suffix, replacing: replacing)
                }
            }
            #expect(writing.isStillAtPath)
        }
        try named.place(at: folder + "/out.bin" + suffix, replacing: false)
        #expect(FileManager.default.fileExists(atPath: folder + "/out.bin" + suffix))
    }

    @Test func aFolderOrFIFOIsNeverReplaced() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(
            atPath: folder + "/out.bin", withIntermediateDirectories: false)
        for replacing in [false, true] {
            #expect(throws: PlacementError.notAFile(folder + "/out.bin")) {
                try part().place(at: folder + "/out.bin", replacing: replacing)
            }
        }
        try FileManager.default.removeItem(atPath: folder + "/out.bin")
        #expect(mkfifo(folder + "/out.bin", 0o600) == 0)
        for replacing in [false, true] {
            #expect(throws: PlacementError.notAFile(folder + "/out.bin")) {
                try part().place(at: folder + "/out.bin", replacing: replacing)
            }
        }
        #expect(contents("out.bin.part") == "new")
    }
}
