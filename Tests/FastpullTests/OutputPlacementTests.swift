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
