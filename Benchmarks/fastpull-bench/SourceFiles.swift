import FastpullFixtures
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The files the servers serve, generated once per session with ``FixtureContent`` (deterministic,
/// incompressible), and the byte-for-byte check of what a tool wrote.
enum SourceFiles {
    /// The name of the single source file of `size` bytes (scenarios with the same size share it).
    static func singleName(size: Int64) -> String { "src-\(size).bin" }

    /// The folder (under the document root) of a many-files set, and the name of its `index`-th file.
    static func batchFolder(count: Int, size: Int64) -> String { "many-\(count)x\(size)" }
    static func batchName(index: Int) -> String { String(format: "f-%04d.bin", index) }

    /// Writes `path` with `size` bytes of fixture content for `seed`, unless it already has that size.
    static func ensure(path: String, size: Int64, seed: UInt64) throws {
        if let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            (attributes[.size] as? NSNumber)?.int64Value == size
        {
            return
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw BenchError("cannot create \(path): \(systemMessage())") }
        defer { close(descriptor) }
        let chunk = 4 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < size {
            let count = Int(min(Int64(chunk), size - offset))
            let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
            FixtureContent.fill(slice, offset: offset, seed: seed)
            try writeAll(descriptor, UnsafeRawBufferPointer(slice), path: path)
            offset += Int64(count)
        }
    }

    private static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws {
        var done = 0
        while done < bytes.count {
            let written = write(descriptor, bytes.baseAddress! + done, bytes.count - done)
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { throw BenchError("cannot write \(path): \(systemMessage())") }
            done += written
        }
    }

    /// Compares `output` with `source` byte for byte. Returns nil when they are identical, else what
    /// differs (missing file, size, first differing offset).
    static func difference(output: String, source: String) -> String? {
        let outputDescriptor = open(output, O_RDONLY)
        guard outputDescriptor >= 0 else { return "no output file" }
        defer { close(outputDescriptor) }
        let sourceDescriptor = open(source, O_RDONLY)
        guard sourceDescriptor >= 0 else { return "cannot open the source \(source)" }
        defer { close(sourceDescriptor) }
        var outputStat = stat()
        var sourceStat = stat()
        fstat(outputDescriptor, &outputStat)
        fstat(sourceDescriptor, &sourceStat)
        guard outputStat.st_size == sourceStat.st_size else {
            return "size \(outputStat.st_size), expected \(sourceStat.st_size)"
        }
        let chunk = 8 << 20
        let left = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        let right = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer {
            left.deallocate()
            right.deallocate()
        }
        var offset: Int64 = 0
        while offset < Int64(sourceStat.st_size) {
            let count = Int(min(Int64(chunk), Int64(sourceStat.st_size) - offset))
            guard readFully(outputDescriptor, left, count: count, at: offset),
                readFully(sourceDescriptor, right, count: count, at: offset)
            else { return "read error at \(offset)" }
            if memcmp(left.baseAddress!, right.baseAddress!, count) != 0 {
                var index = 0
                while left[index] == right[index] { index += 1 }
                return "differs at byte \(offset + Int64(index))"
            }
            offset += Int64(count)
        }
        return nil
    }

    private static func readFully(
        _ descriptor: Int32, _ buffer: UnsafeMutableRawBufferPointer, count: Int, at offset: Int64
    ) -> Bool {
        var done = 0
        while done < count {
            let got = pread(descriptor, buffer.baseAddress! + done, count - done, off_t(offset) + off_t(done))
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { return false }
            done += got
        }
        return true
    }
}

/// A fatal harness error with a message for the user.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// `strerror(errno)`.
func systemMessage() -> String { String(cString: strerror(errno)) }

/// Removes everything inside `directory` (not the directory itself); creates it when missing.
func emptyDirectory(_ directory: String) throws {
    let manager = FileManager.default
    if manager.fileExists(atPath: directory) {
        for name in try manager.contentsOfDirectory(atPath: directory) {
            try manager.removeItem(atPath: directory + "/" + name)
        }
    } else {
        try manager.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }
}
