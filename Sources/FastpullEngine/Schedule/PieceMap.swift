/// The ownership map of a segmented download: the file's pieces in order, which connection owns
/// which, and the contiguous prefix that is complete. It keeps the rules that keep a byte from being
/// written twice: a piece has at most one owner, and a split never moves a piece's end below what
/// its owner claimed. Which connection gets which piece is the picker's (``SegmentTable``).
struct PieceMap: Sendable, Equatable {
    typealias Worker = Int

    /// One segment and its state.
    struct Piece: Sendable, Equatable {
        var segment: Segment
        /// Bytes `[resumeOffset, claimed)` are being written by the owner right now.
        var claimed: Int64
        var owner: Worker?
        /// The end of the owner's current request window.
        var windowEnd: Int64
        /// Whether the owner reads the probe's answer (``SegmentTable/adopt(_:end:requestCost:now:)``).
        var opening = false

        var start: Int64 { segment.start }
        var end: Int64 { segment.end }
        /// Bytes nobody has claimed yet.
        var unclaimed: Int64 { segment.end - claimed }
    }

    var pieces: [Piece]
    /// The start of the piece each connection owns (a piece's start never moves).
    var owned: [Worker: Int64] = [:]
    /// The first piece that is not complete.
    var firstIncomplete = 0
    /// Bytes written in all pieces (kept as a running count: read at every tick, under the lock).
    var writtenBytes: Int64 = 0

    init(segments: [Segment]) {
        pieces = segments.map {
            Piece(segment: $0, claimed: $0.resumeOffset, owner: nil, windowEnd: $0.resumeOffset)
        }
        writtenBytes = segments.reduce(0) { $0 + $1.written }
        advanceFrontier()
    }

    var segments: [Segment] { pieces.map(\.segment) }
    var isComplete: Bool { firstIncomplete == pieces.count }

    /// The end of the contiguous complete prefix.
    var frontier: Int64 {
        guard firstIncomplete < pieces.count else { return pieces.last?.end ?? 0 }
        return pieces[firstIncomplete].segment.resumeOffset
    }

    /// Whether some piece is incomplete and has no owner.
    var hasWaitingWork: Bool { pieces.contains { $0.owner == nil && !$0.segment.isComplete } }

    /// The index of the piece `worker` owns, if it owns one.
    func ownedIndex(_ worker: Worker) -> Int? {
        owned[worker].flatMap(index(of:))
    }

    /// The index of the piece that starts at `start` (pieces are in order).
    func index(of start: Int64) -> Int? {
        var low = 0
        var high = pieces.count - 1
        while low <= high {
            let middle = (low + high) / 2
            if pieces[middle].start == start { return middle }
            if pieces[middle].start < start { low = middle + 1 } else { high = middle - 1 }
        }
        return nil
    }

    /// Splits a piece at `at` (between its claimed offset and its end); the upper part is a new
    /// waiting piece right after it. Returns the new piece's index.
    mutating func split(_ index: Int, at: Int64) -> Int {
        precondition(at > pieces[index].start && at >= pieces[index].claimed && at < pieces[index].end)
        let upper = Segment(start: at, end: pieces[index].end)
        pieces[index].segment.end = at
        pieces[index].windowEnd = min(pieces[index].windowEnd, at)
        pieces.insert(Piece(segment: upper, claimed: at, owner: nil, windowEnd: at), at: index + 1)
        if pieces[index].segment.isComplete, index == firstIncomplete { advanceFrontier() }
        return index + 1
    }

    /// Bytes `range`, every one of them written, are to be fetched again (they did not verify): they
    /// become one waiting piece of their own, and the frontier goes back to its start. The pieces
    /// around it keep what lies outside the range; a connection that still owned one of the complete
    /// pieces inside it owns nothing now, which it never writes into anyway.
    mutating func reopen(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        var result: [Piece] = []
        result.reserveCapacity(pieces.count + 2)
        for piece in pieces {
            if piece.end <= range.lowerBound || piece.start >= range.upperBound {
                result.append(piece)
                continue
            }
            precondition(piece.segment.isComplete, "only written bytes are fetched again")
            if piece.start < range.lowerBound {
                var head = piece
                head.segment.end = range.lowerBound
                head.segment.written = range.lowerBound - piece.start
                head.claimed = range.lowerBound
                head.windowEnd = min(head.windowEnd, range.lowerBound)
                result.append(head)
            }
            if result.last.map({ $0.end <= range.lowerBound }) ?? true {
                result.append(
                    Piece(
                        segment: Segment(start: range.lowerBound, end: range.upperBound),
                        claimed: range.lowerBound,
                        owner: nil, windowEnd: range.lowerBound))
            }
            if piece.end > range.upperBound {
                result.append(
                    Piece(
                        segment: Segment(
                            start: range.upperBound, end: piece.end, written: piece.end - range.upperBound),
                        claimed: piece.end, owner: nil, windowEnd: piece.end))
            }
        }
        pieces = result
        writtenBytes -= range.upperBound - range.lowerBound
        firstIncomplete = 0
        advanceFrontier()
    }

    mutating func advanceFrontier() {
        while firstIncomplete < pieces.count, pieces[firstIncomplete].segment.isComplete {
            firstIncomplete += 1
        }
    }
}
