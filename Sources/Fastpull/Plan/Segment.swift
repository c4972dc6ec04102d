/// A byte range of the remote file, `[start, end)`, and how much of it has been written.
struct Segment: Sendable, Equatable {
    /// The first byte offset.
    var start: Int64
    /// One past the last byte offset.
    var end: Int64
    /// Bytes of `[start, start + written)` already in the file.
    var written: Int64 = 0

    var length: Int64 { end - start }
    var remaining: Int64 { end - start - written }
    var isComplete: Bool { written >= end - start }
    /// Where the next byte of this segment goes.
    var resumeOffset: Int64 { start + written }
}
