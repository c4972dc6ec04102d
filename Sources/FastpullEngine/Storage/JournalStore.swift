import FastpullHTTP
import FoundationEssentials
import Glibc

/// Reads and atomically replaces the journal files of one download.
///
/// Two files: `<output>.part.fastpull` is replaced with full durability (write a temporary file,
/// fsync it, rename it, fsync the folder); `<output>.part.fastpull-live` is replaced often without
/// syncing, for resuming after a process crash. A torn live file after a power loss is simply ignored.
package struct JournalStore: Sendable {
    let durablePath: String
    let livePath: String

    /// The longest suffix any file kept beside the output adds to its name: the live journal's
    /// temporary file, `<output>.part.fastpull-live.tmp`.
    static let longestSuffix = ".part.fastpull-live.tmp"

    package init(partPath: String) {
        durablePath = partPath + ".fastpull"
        livePath = partPath + ".fastpull-live"
    }

    var exists: Bool { FileSystem.exists(durablePath) || FileSystem.exists(livePath) }

    /// Whether a journal here (durable or live, intact) names `url` as its download's (a URL, with
    /// ` bytes=…` for a part of the file, as the resume compares it).
    package func records(url: String) -> Bool {
        let (durable, live) = read()
        return [durable, live].contains { data in
            guard let data, let journal = try? Journal.decode(data) else { return false }
            return journal.url == url
        }
    }

    /// The raw bytes of the durable and the live journal, where present.
    func read() -> (durable: Data?, live: Data?) {
        (Self.contents(durablePath), Self.contents(livePath))
    }

    func write(_ journal: Journal, durably: Bool) throws(StorageError) {
        let target = durably ? durablePath : livePath
        try Self.replace(target, with: journal.encoded(), sync: durably)
    }

    func remove() throws(StorageError) {
        try FileSystem.remove(durablePath)
        try FileSystem.remove(livePath)
        try FileSystem.remove(durablePath + ".tmp")
        try FileSystem.remove(livePath + ".tmp")
    }

    /// The kernel's boot identifier, which changes on every reboot (read once: it cannot change while
    /// the process runs).
    static func currentBootID() -> String? { bootID }

    private static let bootID: String? = {
        guard let data = contents("/proc/sys/kernel/random/boot_id") else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingSpacesAndLines()
        return text.isEmpty ? nil : text
    }()

    private static func contents(_ path: String) -> Data? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            data.append(contentsOf: buffer[0..<count])
            // A journal is small; refuse to slurp anything huge planted at its path.
            if data.count > 64 << 20 { return nil }
        }
        return data
    }

    private static func replace(_ path: String, with data: Data, sync: Bool) throws(StorageError) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o666)
        guard fd >= 0 else { throw StorageError(call: "open", path: temporary, errno: errno) }
        var failure: StorageError?
        data.withUnsafeBytes { bytes in
            var done = 0
            while done < bytes.count {
                let count = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else {
                    failure = StorageError(call: "write", path: temporary, errno: count < 0 ? errno : EIO)
                    return
                }
                done += count
            }
        }
        if failure == nil, sync, fsync(fd) != 0 {
            failure = StorageError(call: "fsync", path: temporary, errno: errno)
        }
        close(fd)
        if let failure {
            unlink(temporary)
            throw failure
        }
        guard rename(temporary, path) == 0 else {
            let error = StorageError(call: "rename", path: path, errno: errno)
            unlink(temporary)
            throw error
        }
        if sync { FileSystem.syncDirectory(containing: path) }
    }
}
