import FastpullHTTP
import FastpullNet
import FoundationEssentials

/// How a connection proves where an answer ended before it takes the next (requests sent ahead),
/// and how it checks that an answer is the one it asked for.
extension SegmentFetcher {
    /// A server did not answer a request sent ahead (it closed the connection, reset it, or sent
    /// nothing for the stall timeout), or failed the answer before it: requests are no longer sent
    /// ahead in this download (unless the download was stopped, or is complete: its last connections
    /// are stopped on purpose then).
    func stopRequestsAhead(at window: SegmentTable.Window) {
        guard !slot.isCancelled, !scheduler.isComplete else { return }
        scheduler.stopRequestsAhead()
        trace?.record("ahead stopped", connection: worker, ["start": window.range.lowerBound])
    }

    /// Reads the head of the answer to `pending`'s request and commits the bytes the answer before it
    /// held (``Ahead/held``) when the head proves that answer's framing (``Ahead/isProven(by:)``):
    /// returns the head, its body not yet read. Otherwise (no head came, it did not parse, or it
    /// proves nothing) the held bytes are given back to be fetched again, the connection closes,
    /// this download sends no more requests ahead, and nil is returned.
    func proveFraming(_ pending: Ahead) throws -> ResponseHead? {
        let connection = pending.connection
        var head: ResponseHead?
        do {
            try slot.attach(connection)
            head = try pool.translated(try connection.readHead(), method: "GET", on: connection)
        } catch {
            head = nil
        }
        slot.detach()
        if let head, pending.isProven(by: head) {
            if pending.held > 0 {
                scheduler.commitHeld(worker, count: pending.held)
                counters.addWritten(pending.held)
            }
            pool.onExchange?(pending.request, head)
            return head
        }
        scheduler.settle(worker, commit: 0, unclaim: pending.held)
        connection.close()
        if slot.isCancelled { throw CancellationError() }
        // A stall while waiting for it has cut the range already: no failure of its own.
        _ = slot.takeEviction()
        stopRequestsAhead(at: pending.window)
        trace?.record(
            "ahead unproven", connection: worker,
            ["start": pending.window.range.lowerBound, "held": pending.held, "status": head?.status ?? 0])
        return nil
    }

    /// How many bytes of an answer come between two looks for when its connection's next request may
    /// go ahead, while it may not yet (``SegmentTable/aheadLead(for:)``).
    static let aheadLookStep: Int64 = 256 << 10

    /// The most of a cut answer read and dropped to keep its connection: past this, closing the
    /// connection (and opening another later) is cheaper.
    static let drainLimit: Int64 = 256 << 10

    /// Accepts only a 206 of the version pinned at the probe (``RemoteFile/changeReason(in:)``), framed
    /// as the bytes of one range (not `multipart/byteranges`), whose Content-Range is exactly the
    /// requested range of a file of `size`. Nothing of a response that fails here is written.
    ///
    /// A 200 is the whole file: of another version when its validators say so (a remote change), else
    /// of this one (``TransferError/wholeFile``: the server does not serve ranges now, or, as Apache
    /// does for a file changed within the last minute, took an `If-Range` date for a mismatch). The
    /// connection is left as it is for the caller to read that body.
    static func validate(
        _ head: ResponseHead, requested: ClosedRange<Int64>, remote: RemoteFile, size: Int64,
        connection: HTTPConnection
    ) throws {
        guard head.status == 206 else {
            if (200..<300).contains(head.status) {
                if let reason = remote.changeReason(in: head) {
                    connection.close()
                    throw TransferError.remoteChanged("the server answered with the whole file: \(reason)")
                }
                throw TransferError.wholeFile(requested: requested)
            }
            connection.discardBody(of: head, method: "GET")
            throw TransferError.status(answering: head)
        }
        if let reason = remote.changeReason(in: head) {
            connection.close()
            throw TransferError.remoteChanged(reason)
        }
        if head.isMultipartByteranges {
            // Not the bytes of the range asked for: a server (or something before it) that answers
            // unlike the one probed. Nothing of it is written; the download starts over.
            connection.close()
            throw TransferError.remoteChanged(
                "it answered bytes \(requested.lowerBound)-\(requested.upperBound) with a multipart/byteranges body, not the bytes of that range"
            )
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

/// A request sent on a connection before the answer it is reading ended (HTTP/1.1 pipelining): the
/// window it asks for, the request, and the connection its answer comes on, after the current one.
package struct Ahead {
    let window: SegmentTable.Window
    let request: RequestHead
    let connection: HTTPConnection
    /// The bytes before `window` that the answer before it wrote after this request went: claimed
    /// and written, committed only once this answer's head proves where that answer ended.
    let held: Int64

    /// Whether `head`, read where the answer before it ended by its length, proves that the answer
    /// ended there: a 206 for exactly this window. A server that cut that answer short puts this
    /// one's bytes where its head should be, and one that ran past its length puts its own there; a
    /// head parses there only when those bytes happen to hold one (a file of recorded HTTP traffic
    /// can), and then it is not a 206 for this window. Any other answer (a 200, an error status)
    /// proves nothing: the held bytes are fetched again, which costs one request's lead.
    func isProven(by head: ResponseHead) -> Bool { Self.head(head, proves: window.range) }

    /// Whether `head`, the answer to a request for `range`, proves the framing of the answer before
    /// it (``isProven(by:)``).
    static func head(_ head: ResponseHead, proves range: Range<Int64>) -> Bool {
        guard head.status == 206, !head.isMultipartByteranges,
            let answered = ContentRange.parse(head.headers["Content-Range"] ?? "")
        else { return false }
        return answered.first == range.lowerBound && answered.last == range.upperBound - 1
    }
}

/// A range request answered with the whole file of the pinned version: the fetcher that got it parks
/// the answer, its body not yet read, in the download's ``WholeFileHandOff`` and throws this, which
/// names the answer but holds no connection; the pipeline takes the answer from there and downloads
/// the file from it as one stream.
package struct WholeFileAnswered: Error {
    /// The fetcher (its worker number) whose answer is parked.
    let worker: Int
    /// The range that was asked for.
    let requested: ClosedRange<Int64>
}

/// Where the fetchers of one download park answers that brought the whole file (``WholeFileAnswered``),
/// by worker, until the pipeline takes one or the download ends: an answer nobody takes is closed.
package final class WholeFileHandOff: Sendable {
    private let parked = PlainMutex<[Int: UnreadAnswer]>([:])

    /// Parks `connection`'s answer `head` as `worker`'s.
    func park(_ connection: HTTPConnection, head: ResponseHead, worker: Int) {
        let replaced = parked.withLock {
            $0.updateValue(UnreadAnswer(connection: connection, head: head), forKey: worker)
        }
        replaced?.discard()
    }

    /// `worker`'s parked answer, once.
    func take(_ worker: Int) -> (connection: HTTPConnection, head: ResponseHead)? {
        parked.withLock { $0.removeValue(forKey: worker) }?.take()
    }

    /// Closes `worker`'s parked answer, if any.
    func discard(_ worker: Int) {
        parked.withLock { $0.removeValue(forKey: worker) }?.discard()
    }
}
