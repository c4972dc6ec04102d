import FastpullHTTP
import FastpullNet
import FoundationEssentials

/// Fetches the whole file over one connection when the server does not honour ranges or gives no
/// length (chunked bodies included), or when the probe's answer holds the whole of a small file,
/// hashing the bytes as they pass (every algorithm in `algorithms`, through one ``DigestSet``). A
/// failure restarts from zero: without ranges there is no way to ask for the rest (and a small file
/// is cheaper fetched again than resumed).
///
/// Runs on its own ``ThreadExecutor``.
package struct StreamFetcher: Sendable {
    let remote: RemoteFile
    let pool: ConnectionPool
    /// Where the bytes go: the `.part` file, or an output that takes them in order.
    let destination: any ByteDestination
    let counters: TransferCounters
    let retries: Int
    let policy: RetryPolicy
    /// Algorithms to compute (SHA-256 among them where the download reports it).
    var algorithms: [Digest.Algorithm] = []
    /// Set when the stream goes on where a ring left an ordered output (``Resume``).
    var resuming: Resume? = nil
    /// Set for a document Fastpull reads for itself: a body that declares, or reaches, more than its
    /// limit is refused, and no byte past the limit is written.
    var document: DocumentFetch? = nil

    /// An ordered output whose first `offset` bytes went out already, from ranges of the same
    /// version: the stream reads the whole answer, drops those bytes unseen, and continues `digests`,
    /// which hold exactly them, with the rest.
    struct Resume: @unchecked Sendable {
        // @unchecked: `digests` is handed over by the drain that stopped (its task awaited) to this
        // stream, the only one that uses it from then on, one thread at a time.
        let offset: Int64
        let digests: DigestSet
    }

    struct Result {
        var size: Int64
        /// Every digest of the body: each of `algorithms`.
        var digests: [Digest.Algorithm: [UInt8]]
        /// When the body's last byte was written.
        var lastByteAt: ContinuousClock.Instant

        var sha256: [UInt8] { digests[.sha256] ?? [] }
    }

    func run(pending: (connection: HTTPConnection, head: ResponseHead)?) async throws -> Result {
        let slot = CancellationSlot()
        return try await withTaskCancellationHandler {
            var pending = pending
            // Each try starts from byte 0, so bytes written are no progress: every failure counts.
            var budget = RetryBudget(retries: retries, policy: policy)
            while true {
                if slot.isCancelled { throw CancellationError() }
                // A stream that goes on from a ring's bytes has their digests; nothing of it is
                // tried twice (the output cannot start over), so they are only ever continued once.
                let digests = resuming?.digests ?? DigestSet(algorithms)
                var written: Int64 = 0
                do {
                    try fetchOnce(pending: pending, digests: digests, written: &written, slot: slot)
                    let lastByteAt = ContinuousClock.now
                    return Result(size: written, digests: digests.finalize(), lastByteAt: lastByteAt)
                } catch {
                    pending = nil
                    let failure = Failure(error, url: remote.finalURL)
                    if slot.isCancelled { throw CancellationError() }
                    guard failure.retryable else { throw failure.error }
                    let delay: Duration
                    let attempt: Int
                    switch budget.decide(after: failure, wroteBytes: written > 0) {
                    case .now: continue
                    case .giveUp: throw failure.error
                    case .after(let wait, let count): (delay, attempt) = (wait, count)
                    }
                    counters.retries.add(1, ordering: .relaxed)
                    counters.bytesWritten.subtract(written, ordering: .relaxed)
                    try destination.restart()
                    counters.waitForRetry(attempt, of: retries, reason: failure.error.message, delay: delay)
                    defer { counters.retryStarted() }
                    try await AlarmClock.sleep(for: delay)
                }
            }
        } onCancel: {
            slot.cancel()
        }
    }

    /// Whether `head` is a 206 whose one range is the whole file: the probe's answer to `bytes=0-` for a
    /// file small enough to be read from that answer alone.
    private func answersWholeFile(_ head: ResponseHead) -> Bool {
        guard head.status == 206, let size = remote.size,
            let range = head.headers["Content-Range"].flatMap(ContentRange.parse)
        else { return false }
        return range.first == 0 && range.last == size - 1 && (range.completeLength ?? size) == size
    }

    private func fetchOnce(
        pending: (connection: HTTPConnection, head: ResponseHead)?, digests: DigestSet, written: inout Int64,
        slot: CancellationSlot
    ) throws {
        let url = remote.finalURL
        guard let origin = Origin(url) else {
            throw TransferError.badRedirect(status: 0, location: url.absoluteString)
        }
        let connection: HTTPConnection
        let head: ResponseHead
        if let pending {
            connection = pending.connection
            head = pending.head
            try slot.attach(connection)
        } else {
            (connection, head) = try pool.exchange(
                pool.request("GET", url, origin: origin), to: origin, slot: slot)
        }
        counters.activeConnections.add(1, ordering: .relaxed)
        defer {
            counters.activeConnections.subtract(1, ordering: .relaxed)
            slot.detach()
            pool.giveBack(connection)
        }
        guard (200..<300).contains(head.status), head.status != 206 || answersWholeFile(head) else {
            connection.discardBody(of: head, method: "GET")
            throw TransferError.status(answering: head)
        }
        if let reason = remote.changeReason(in: head) {
            connection.close()
            throw TransferError.remoteChanged(reason)
        }
        let expected = remote.size ?? head.contentLength
        if let declared = head.contentLength, let size = remote.size, declared != size {
            connection.close()
            throw TransferError.sizeChanged(expected: size, got: declared)
        }
        if let document, let expected, expected > document.limit {
            connection.close()
            throw document.tooLarge(remote.url, declared: expected)
        }
        var offset: Int64 = 0
        let start = resuming?.offset ?? 0
        defer { written = offset }
        try connection.readBody(of: head, method: "GET") { bytes in
            let count = Int64(bytes.count)
            if let expected, offset + count > expected { throw TransferError.bodyTooLong(expected: expected) }
            if let document, offset + count > document.limit {
                throw document.tooLarge(remote.url, declared: nil)
            }
            // Bytes the output has already: fetched again, never handed over twice.
            let skipped = Int(min(max(start - offset, 0), count))
            if skipped > 0 { counters.bytesFetched.add(Int64(skipped), ordering: .relaxed) }
            if skipped < bytes.count {
                let rest = UnsafeRawBufferPointer(rebasing: bytes[skipped...])
                try destination.write(rest, at: offset + Int64(skipped))
                digests.update(rest)
                counters.addWritten(Int64(rest.count))
            }
            offset += count
        }
        if let expected, offset != expected {
            throw TransferError.bodyTooShort(expected: expected, got: offset)
        }
    }
}
