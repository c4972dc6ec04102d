import FastpullHTTP
import FastpullNet
import FoundationEssentials

/// A partial file another program left at the destination, taken as the beginning of the download
/// (``Configuration/Resume/adoptsPartialFile``) once the server proves it is: the prefix's last bytes,
/// fetched again, are the same, and nothing says it was written out of order.
///
/// The model: a program that downloads in order (curl, wget, a browser) leaves a prefix, whose end
/// is where its bytes stop; the server's bytes just before that point, fetched again, prove the end
/// is where it should be, and the rest is fetched after it. A program that writes at offsets
/// (aria2c, axel, lftp) leaves a file of any length with gaps inside: its control file beside it, or
/// holes in it, say so. A file as long as the server's has no end to prove, and a tail of one
/// repeated byte proves nothing: without a checksum those are refused. A file at the destination is
/// replaced only by a file that begins with every one of its bytes.
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
        func refused(_ reason: String) -> FastpullError {
            FastpullError(
                .integrity,
                "\(path) cannot be continued: \(reason); it is left as it is (--force downloads the file in its place)"
            )
        }
        guard length <= size else {
            throw refused(
                "it holds \(length) bytes, more than the \(size) of \(remote.finalURL.redactedForDisplay)")
        }
        if let other = Self.controlFile(beside: path) {
            throw refused("\(other) beside it says another downloader writes it at offsets, with gaps")
        }
        if FileSystem.hasHoles(path, before: length) {
            throw refused("it has holes (a downloader that writes at offsets left it)")
        }
        let checked = !configuration.knownChecksums.isEmpty || !remote.serverDigests.isEmpty
        if length == size, !checked {
            throw refused(
                "it is as long as the server's file, so no end is left to prove; give --checksum to check it")
        }
        let first = length - min(length, Self.adoptionOverlap)
        let expected: [UInt8]
        do {
            expected = try FileSystem.read(path, at: first, count: Int(length - first))
        } catch {
            throw Failure(error, url: remote.finalURL).error
        }
        if !checked, expected.count > 1, expected.allSatisfy({ $0 == expected[0] }) {
            throw refused(
                "its last \(ByteFormat.size(Int64(expected.count))) are one repeated byte, which proves nothing"
            )
        }
        let url = remote.finalURL
        let received = try await withTaskExecutorPreference(executor) {
            let slot = CancellationSlot()
            return try await withTaskCancellationHandler {
                try Self.fetch(
                    first...(length - 1), of: url, version: remote, size: size, pool: pool, slot: slot)
            } onCancel: {
                slot.cancel()
            }
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
        pool: ConnectionPool, slot: CancellationSlot
    ) throws -> [UInt8] {
        guard let origin = Origin(url) else {
            throw TransferError.badRedirect(status: 0, location: url.absoluteString)
        }
        let request = pool.request("GET", url, origin: origin, range: range, ifRange: remote.ifRangeValidator)
        let (connection, head) = try pool.exchange(request, to: origin, slot: slot)
        defer { slot.detach() }
        let contentRange = head.headers["Content-Range"].flatMap(ContentRange.parse)
        guard head.status == 206, let contentRange, contentRange.first == range.lowerBound,
            contentRange.last == range.upperBound, contentRange.completeLength == size,
            remote.changeReason(in: head) == nil
        else {
            connection.close()
            if head.status == 200 || (contentRange != nil && contentRange?.completeLength != size)
                || remote.changeReason(in: head) != nil
            {
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
    /// The control files other downloaders keep beside a file they write at offsets.
    static let controlSuffixes = [".aria2", ".st", ".lftp-pget-status"]

    /// The control file of another downloader beside `path`, if one is there.
    static func controlFile(beside path: String) -> String? {
        controlSuffixes.map { path + $0 }.first { FileSystem.exists($0) }
    }

    /// Whether the verified `file` may replace the file at the destination because that one is what
    /// this download continued (``Configuration/Resume/adoptsPartialFile``): every one of its bytes
    /// is the file's at the same offset. Then nothing of it is lost, whichever run adopted it (a run
    /// resumed from the journal after an interrupted adoption too), and a file the user put there
    /// since is never taken for it unless it is a prefix of the download as well. An empty file is
    /// such a prefix (a downloader that failed before its first byte left it).
    func continuesDestination(_ file: OutputFile) -> Bool {
        guard configuration.resume.adoptsPartialFile, FileSystem.isRegularFile(outputPath) else {
            return false
        }
        return file.begins(with: outputPath)
    }
}
