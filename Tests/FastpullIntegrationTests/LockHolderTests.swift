import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine

#if canImport(Glibc)
    import Glibc
#endif

/// Who holds a `.part` file, told from `/proc/locks` even when the machine holds many locks: the
/// listing is then longer than a page, and a reader that trusts its size of 0 got only the first page
/// (a busy CI machine lost the holder's process id from the "another download is writing" message).
@Suite("The holder of a lock")
struct LockHolderTests {
    @Test func isFoundAmongHundredsOfLocks() throws {
        let folder = TemporaryFolder()
        var descriptors: [Int32] = []
        defer { for fd in descriptors { close(fd) } }
        for index in 0..<300 {
            let fd = open(folder.url("\(index)").path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
            try #require(fd >= 0)
            descriptors.append(fd)
            try #require(flock(fd, LOCK_EX | LOCK_NB) == 0)
        }
        let listing = try #require(OutputFile.readToEnd("/proc/locks"))
        #expect(listing.utf8.count > 4096, "\(listing.utf8.count) bytes: not past the first page")
        var info = stat()
        // The first lock taken: the listing puts the newest first, so this one is past the first page.
        try #require(fstat(descriptors[0], &info) == 0)
        #expect(OutputFile.lockHolder(device: info.st_dev, inode: info.st_ino) == getpid())
    }
}
