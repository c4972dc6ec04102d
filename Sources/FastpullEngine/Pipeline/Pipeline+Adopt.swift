import FastpullHTTP
import FastpullNet
import FoundationEssentials

/// A partial file another program left at the destination, taken as the beginning of the download
/// (``Configuration/Resume/adoptsPartialFile``) once the server proves it is: the prefix's last bytes,
/// fetched again, are the same.
extension Pipeline {
    /// How much of a prefix's end is fetched again to prove it: 64 KiB (all of a shorter prefix).
    static let adoptionOverlap: Int64 = 64 << 10

    /// The length of the file at the destination that this download would adopt, or nil: adoption is
    /// asked for, no journal of Fastpull's is there, and a regular file of some length is.
    func adoptableLength() -> Int64? {
        guard configuration.resume.adoptsPartialFile, !download.planOnly, !store.exists,
            !FileSystem.isStandardOutput(outputPath), FileSystem.isRegularFile(outputPath),
            let length = FileSystem.size(outputPath), length > 0
        else { return nil }
        return length
    }

    /// The prefix of `length` bytes at the destination, proven the beginning of `remote`: its last
    /// ``adoptionOverlap`` bytes are fetched again (one ranged GET, on a connection thread, for the
    /// version the probe found) and compared. Throws when the file is longer than the server's or the
    /// bytes differ, leaving it as it is.
    func proveAdoptable(
        length: Int64, remote: RemoteFile, size: Int64, pool: ConnectionPool, executor: ThreadExecutor
    ) async throws {
        let path = outputPath
        guard length <= size else {
            throw FastpullError(
                .integrity,
                "\(path) holds \(length) bytes, more than the \(size) of \(remote.finalURL.redactedForDisplay): it is not a part of that file; it is left as it is"
            )
        }
        let first = length - min(length, Self.adoptionOverlap)
        let expected: [UInt8]
        do {
            expected = try FileSystem.read(path, at: first, count: Int(length - first))
        } catch {
            throw Failure(error, url: remote.finalURL).error
        }
        let url = remote.finalURL
        let received = try await withTaskExecutorPreference(executor) {
            try Self.fetch(first...(length - 1), of: url, version: remote, size: size, pool: pool)
        }
        guard received == expected else {
            let offset = (0..<min(received.count, expected.count)).first { received[$0] != expected[$0] }
                .map { first + Int64($0) }
            throw FastpullError(
                .integrity,
                "\(path) is not the beginning of \(url.redactedForDisplay): "
                    + (offset.map { "its byte \($0) differs from the server's" }
                        ?? "the server sent \(received.count) of its last \(expected.count) bytes")
                    + "; it is left as it is (--force downloads the file in its place)")
        }
        download.emit(
            .warning(
                "continuing \(path) from \(ByteFormat.size(length)): its last \(ByteFormat.size(length - first)) match the server's"
            ))
    }

    /// The bytes `range` of `url`, of the version `remote` describes (`If-Range` with its validator,
    /// so that another version answers with the whole file, which is refused). Blocking.
    private static func fetch(
        _ range: ClosedRange<Int64>, of url: URL, version remote: RemoteFile, size: Int64,
        pool: ConnectionPool
    ) throws -> [UInt8] {
        guard let origin = Origin(url) else {
            throw TransferError.badRedirect(status: 0, location: url.absoluteString)
        }
        let slot = CancellationSlot()
        let request = pool.request(
            "GET", url, origin: origin, range: range, ifRange: remote.etag ?? remote.lastModified)
        let (connection, head) = try pool.exchange(request, to: origin, slot: slot)
        defer { slot.detach() }
        let contentRange = head.headers["Content-Range"].flatMap(ContentRange.parse)
        guard head.status == 206, let contentRange, contentRange.first == range.lowerBound,
            contentRange.last == range.upperBound, contentRange.completeLength == size
        else {
            connection.close()
            if head.status == 200 || (contentRange != nil && contentRange?.completeLength != size) {
                throw TransferError.remoteChanged("the server answered the overlap with another version")
            }
            throw TransferError.badContentRange(
                requested: range, got: head.headers["Content-Range"] ?? "status \(head.status)")
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(range.count)
        try connection.readBody(of: head, method: "GET") { chunk in
            guard bytes.count + chunk.count <= range.count else {
                throw TransferError.badContentRange(requested: range, got: "a longer body")
            }
            bytes.append(contentsOf: chunk)
        }
        pool.giveBack(connection)
        return bytes
    }
}

extension Pipeline {
    /// Whether the verified `file` may replace the file at the destination because that one is what
    /// this download continued (``Configuration/Resume/adoptsPartialFile``): no longer than it, and
    /// its last bytes (up to ``adoptionOverlap``) are the same as the file's there. A run resumed from
    /// the journal after an adoption is interrupted finds it so too.
    func continuesDestination(_ file: OutputFile) -> Bool {
        guard configuration.resume.adoptsPartialFile, FileSystem.isRegularFile(outputPath),
            let length = FileSystem.size(outputPath), length > 0, let size = try? file.size(), length <= size
        else { return false }
        let first = length - min(length, Self.adoptionOverlap)
        guard let there = try? FileSystem.read(outputPath, at: first, count: Int(length - first)) else {
            return false
        }
        var ours = [UInt8](repeating: 0, count: there.count)
        let read = ours.withUnsafeMutableBytes { (try? file.read(into: $0, at: first)) ?? 0 }
        return read == there.count && ours == there
    }
}
