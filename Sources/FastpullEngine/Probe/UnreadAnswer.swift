import FastpullHTTP
import FastpullNet

/// A probe's answer whose body is still unread, kept for the download that follows it (a batch's
/// probe to name a file is that file's first GET): the connection and the response head, taken once.
/// An answer nobody takes closes its connection when it goes.
package final class UnreadAnswer: Sendable {
    // The connection is handed over, not shared: whoever takes it is its only user from then on.
    private struct Answer: @unchecked Sendable {
        let connection: HTTPConnection
        let head: ResponseHead
    }
    private let answer: PlainMutex<Answer?>

    init(connection: HTTPConnection, head: ResponseHead) {
        answer = PlainMutex(Answer(connection: connection, head: head))
    }

    deinit { discard() }

    /// The connection and head, to the first caller only.
    func take() -> (connection: HTTPConnection, head: ResponseHead)? {
        answer.withLock { answer in
            defer { answer = nil }
            return answer.map { ($0.connection, $0.head) }
        }
    }

    /// Closes the connection unless it was taken.
    package func discard() { take()?.connection.close() }
}
