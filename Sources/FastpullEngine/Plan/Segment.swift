/// A byte range of the remote file, `[start, end)`, and how much of it has been written.
package struct Segment: Sendable, Equatable {
    /// The first byte offset.
    package var start: Int64
    /// One past the last byte offset.
    package var end: Int64
    /// Bytes of `[start, start + written)` already in the file.
    package var written: Int64 = 0

    package init(start: Int64, end: Int64, written: Int64 = 0) {
        self.start = start
        self.end = end
        self.written = written
    }

    var length: Int64 { end - start }
    var remaining: Int64 { end - start - written }
    var isComplete: Bool { written >= end - start }
    /// Where the next byte of this segment goes.
    var resumeOffset: Int64 { start + written }
}
