import FastpullHTTP
import Synchronization

/// The probe's answer to `GET Range: bytes=0-`, its body unread, for the first connection to take
/// (once): the connection, its head, and the window the scheduler gave it (nil until then, and when
/// the first piece could not be given to it; the connection is then closed).
package final class OpeningAnswer: Sendable {
    // The connection is handed over, not shared: whoever takes it is its only user from then on.
    private struct Answer: @unchecked Sendable {
        let connection: HTTPConnection
        let head: ResponseHead
        var window: SegmentTable.Window?
    }
    private let answer: Mutex<Answer?>
    /// Where the answer's bytes end (its Content-Range's last byte, plus one).
    let end: Int64

    /// Nil unless `head` is a 206 from byte 0 with a Content-Range.
    init?(connection: HTTPConnection, head: ResponseHead) {
        guard head.status == 206, let range = head.headers["Content-Range"].flatMap(ContentRange.parse),
            range.first == 0, let last = range.last
        else { return nil }
        end = last + 1
        answer = Mutex(Answer(connection: connection, head: head))
    }

    /// The window the scheduler gave the answer (``Scheduler/adopt(_:end:requestCost:)``).
    func assign(_ window: SegmentTable.Window?) {
        answer.withLock { $0?.window = window }
    }

    /// The answer, to the first caller only.
    func take() -> (connection: HTTPConnection, head: ResponseHead, window: SegmentTable.Window?)? {
        answer.withLock { answer in
            defer { answer = nil }
            return answer.map { ($0.connection, $0.head, $0.window) }
        }
    }

    /// Closes the connection unless it was taken.
    func discard() { take()?.connection.close() }
}
