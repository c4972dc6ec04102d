import Foundation

/// One connection's work loop: take a segment from the scheduler, fetch it with a ranged GET into the
/// file, and ask for more, reusing the connection (keep-alive). A failure mid-segment retries from the
/// segment's first unwritten byte, never from its start.
///
/// Runs on its own ``ThreadExecutor``: its socket calls block that thread only.
struct SegmentFetcher: Sendable {
    let remote: RemoteFile
    let size: Int64
    let pool: ConnectionPool
    let file: OutputFile
    let scheduler: Scheduler
    let counters: TransferCounters
    let retries: Int
    let policy: RetryPolicy

    func run() async throws {
        let slot = CancellationSlot()
        try await withTaskCancellationHandler {
            while let assignment = scheduler.assignNext() {
                do {
                    try await fetch(assignment, slot: slot)
                } catch {
                    scheduler.giveBack(index: assignment.index)
                    throw error
                }
            }
        } onCancel: {
            slot.cancel()
        }
    }

    private func fetch(_ assignment: SegmentTable.Assignment, slot: CancellationSlot) async throws {
        var segment = assignment.segment
        var failures = 0
        while !segment.isComplete {
            if slot.isCancelled { throw CancellationError() }
            let before = segment.written
            do {
                try fetchOnce(&segment, index: assignment.index, slot: slot)
            } catch {
                let failure = Failure(error, url: remote.finalURL)
                if slot.isCancelled { throw CancellationError() }
                // The original error goes up: the pipeline decides what a changed file means.
                guard failure.retryable else { throw error }
                if failure.staleConnection && before == segment.written && failures == 0 { continue }
                // A failure after progress starts a fresh budget: the link works, it just drops.
                failures = segment.written > before ? 1 : failures + 1
                guard failures <= retries else { throw error }
                counters.retries.add(1, ordering: .relaxed)
                try await Task.sleep(for: policy.delay(attempt: failures, retryAfter: failure.retryAfter))
            }
        }
    }

    /// One request for the segment's unwritten bytes, written as they arrive.
    private func fetchOnce(_ segment: inout Segment, index: Int, slot: CancellationSlot) throws {
        let url = remote.finalURL
        guard let origin = Origin(url) else {
            throw TransferError.badRedirect(status: 0, location: url.absoluteString)
        }
        let connection = try pool.connection(to: origin)
        try slot.attach(connection)
        counters.activeConnections.add(1, ordering: .relaxed)
        defer {
            counters.activeConnections.subtract(1, ordering: .relaxed)
            slot.detach()
            pool.giveBack(connection)
        }
        let requested = segment.resumeOffset...(segment.end - 1)
        let ifRange = remote.ifRangeValidator
        try connection.send(Requests.make("GET", url, origin: origin, range: requested, ifRange: ifRange))
        let head = try connection.readHead()
        try Self.validate(
            head, requested: requested, size: size, conditional: ifRange != nil, connection: connection)

        var offset = requested.lowerBound
        let end = segment.end
        var written: Int64 = 0
        defer { segment.written += written }
        try connection.readBody(of: head, method: "GET") { bytes in
            let count = Int64(bytes.count)
            guard offset + count <= end else {
                throw TransferError.bodyTooLong(expected: end - requested.lowerBound)
            }
            try file.write(bytes, at: offset)
            offset += count
            written += count
            counters.addWritten(count)
            scheduler.recordWritten(index: index, count: count)
        }
        guard offset == end else {
            throw TransferError.bodyTooShort(
                expected: end - requested.lowerBound, got: offset - requested.lowerBound)
        }
    }

    /// Accepts only a 206 whose Content-Range is exactly the requested range of a file of `size`. A 200
    /// to a `conditional` (If-Range) request means the file changed.
    static func validate(
        _ head: ResponseHead, requested: ClosedRange<Int64>, size: Int64, conditional: Bool,
        connection: HTTPConnection
    ) throws {
        guard head.status == 206 else {
            if (200..<300).contains(head.status) {
                connection.close()
                if conditional {
                    throw TransferError.remoteChanged("the server answered If-Range with the whole file")
                }
                throw TransferError.rangeIgnored(requested: requested)
            }
            connection.discardBody(of: head, method: "GET")
            let retryAfter = head.headers["Retry-After"].flatMap { RetryPolicy.parseRetryAfter($0) }
            throw TransferError.status(head.status, reason: head.reason, retryAfter: retryAfter)
        }
        let text = head.headers["Content-Range"] ?? "none"
        guard let range = ContentRange.parse(text), range.first == requested.lowerBound,
            range.last == requested.upperBound
        else {
            connection.close()
            throw TransferError.badContentRange(requested: requested, got: text)
        }
        if let total = range.completeLength, total != size {
            connection.close()
            throw TransferError.remoteChanged("its size changed from \(size) to \(total) bytes")
        }
        if let length = head.contentLength, length != requested.upperBound - requested.lowerBound + 1 {
            connection.close()
            throw TransferError.badContentRange(
                requested: requested, got: "\(text) with Content-Length \(length)")
        }
    }
}
