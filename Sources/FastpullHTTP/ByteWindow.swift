import Synchronization

/// The part of a remote file one download fetches (curl's `-r`): the download sees that part as the
/// whole file. Every request's range is moved into the window, and every answer is told back in the
/// download's own terms: a `Content-Range` from the window's start, a HEAD's `Content-Length` of the
/// window's length. The engine above it plans, fetches, resumes and checks as for any file.
///
/// An answer that would put bytes outside the window in the file is refused: a 200 to a request
/// for a range (the server ignores ranges, or the file changed and `If-Range` said so), and a 416
/// (the window starts past the file's end), each with ``TransferError``.
///
/// The file's size, once an answer tells it, fixes where a window `-N` starts and where one whose
/// end lies past the file ends.
package final class ByteWindow: Sendable {
    /// The bytes asked for, as the user wrote them.
    package enum Bounds: Sendable, Equatable {
        /// `START-END` (inclusive) or `START-` (to the end).
        case from(Int64, through: Int64?)
        /// `-N`: the last N bytes.
        case last(Int64)
    }

    /// The window asked for.
    package let bounds: Bounds
    /// The first and last byte of the file in the window, once the file's size is known.
    private let resolved = Mutex<(first: Int64, last: Int64)?>(nil)

    /// A window of `bounds`.
    package init(_ bounds: Bounds) {
        self.bounds = bounds
    }

    /// `START-END`, `START-` or `-N`, as curl writes it.
    package var description: String {
        switch bounds {
        case .from(let start, let end): "\(start)-\(end.map(String.init) ?? "")"
        case .last(let count): "-\(count)"
        }
    }

    /// The `Range` value for the bytes `range` of the window (nil: all of it).
    package func rangeValue(for range: ClosedRange<Int64>?) -> String {
        if let window = resolved.withLock({ $0 }) {
            guard let range else { return "bytes=\(window.first)-\(window.last)" }
            return
                "bytes=\(window.first + range.lowerBound)-\(min(window.last, window.first + range.upperBound))"
        }
        switch bounds {
        case .from(let start, let end):
            guard let range else { return "bytes=\(start)-\(end.map(String.init) ?? "")" }
            let last = end.map { min($0, start + range.upperBound) } ?? start + range.upperBound
            return "bytes=\(start + range.lowerBound)-\(last)"
        case .last(let count):
            // Where the window starts is not known before the size: the whole window, whose answer
            // tells it.
            return "bytes=-\(count)"
        }
    }

    /// The window within a file of `size` bytes (the first answer that tells a size fixes it for
    /// the requests after it); throws when it holds none of the file.
    @discardableResult
    package func resolve(size: Int64) throws(TransferError) -> (first: Int64, last: Int64) {
        let window: (first: Int64, last: Int64)
        switch bounds {
        case .from(let start, let end):
            guard start < size else { throw .rangeOutsideFile(description, size: size) }
            window = (start, min(end ?? size - 1, size - 1))
        case .last(let count):
            guard size > 0 else { throw .rangeOutsideFile(description, size: size) }
            window = (max(0, size - count), size - 1)
        }
        // A later answer of another size keeps the window it implies, so that its length differs
        // and the download sees the change.
        resolved.withLock { if $0 == nil { $0 = window } }
        return window
    }

    /// `head`, the answer to a `method` request, in the window's terms; throws for an answer whose
    /// bytes are not the window's.
    package func translate(_ head: ResponseHead, method: String) throws(TransferError) -> ResponseHead {
        var head = head
        if method == "HEAD" {
            guard (200..<300).contains(head.status), let size = head.contentLength else { return head }
            let window = try resolve(size: size)
            head.headers.remove(name: "Content-Length")
            head.headers.add(name: "Content-Length", value: "\(window.last - window.first + 1)")
            return head
        }
        switch head.status {
        case 206:
            guard let text = head.headers["Content-Range"], let range = ContentRange.parse(text),
                let first = range.first, let last = range.last
            else { return head }
            let window: (first: Int64, last: Int64)?
            if let size = range.completeLength {
                window = try resolve(size: size)
            } else {
                window = resolved.withLock { $0 }
            }
            guard let window, first >= window.first, last <= window.last else {
                // Not bytes of the window: left as it came, for the download to refuse.
                return head
            }
            let length = window.last - window.first + 1
            head.headers.remove(name: "Content-Range")
            head.headers.add(
                name: "Content-Range", value: "bytes \(first - window.first)-\(last - window.first)/\(length)"
            )
            return head
        case 416:
            let size = head.headers["Content-Range"].flatMap(ContentRange.parse)?.completeLength
            throw .rangeOutsideFile(description, size: size)
        case 200..<300:
            throw .rangeIgnored(description, status: head.status)
        default:
            return head
        }
    }
}
