import Synchronization

/// The pieces that failed while several sources shared them, each with its bad bytes and who was
/// asked for which of them, until it verifies (the hasher's thread writes and reads it; the lock only
/// makes that safe to state). At most a few pieces are here at once.
package final class SuspectList: Sendable {
    struct Suspect: Sendable {
        var bad: [UInt8]
        var runs: [SourceMap.Run]
    }

    private let suspects = Mutex<[Int: Suspect]>([:])

    /// Keeps the first failure of a piece (later ones replace nothing: the first tells most).
    func add(piece: Int, bad: [UInt8], runs: [SourceMap.Run]) {
        suspects.withLock { if $0[piece] == nil { $0[piece] = Suspect(bad: bad, runs: runs) } }
    }

    func take(piece: Int) -> Suspect? {
        suspects.withLock { $0.removeValue(forKey: piece) }
    }
}
