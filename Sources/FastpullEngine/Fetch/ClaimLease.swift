/// What a connection reading its answer in small pieces (TLS hands over what has arrived, often one
/// 16 KiB record) has claimed ahead of its reads and written without committing yet, so that it takes
/// the scheduler's shared lock once every few milliseconds instead of twice per read.
///
/// The lease is a few milliseconds of the connection's measured rate (``span``), at most ``most``:
/// bytes a steal or a hedge cannot take for that long. A connection whose rate is not measured yet,
/// or a slow one, claims each read as it comes, as every connection did before. Bytes are still
/// claimed before they are written, and everything written is committed before the answer ends
/// (``settle(_:)``).
package struct ClaimLease {
    /// Claimed bytes not read yet.
    private(set) var leased: Int64 = 0
    /// Written bytes not committed yet.
    private(set) var pending: Int64 = 0

    /// How long a lease lasts at the connection's rate.
    static let span = 0.004
    /// The most one lease claims.
    static let most: Int64 = 512 << 10

    /// The connection's rate as the scheduler measured it at the latest exchange (0: not yet).
    private var rate: Double = 0
    /// Whether the latest claim was for that read alone (the rate is unknown, or a lease would be no
    /// larger than one read): its bytes are then committed as soon as they are written, as a
    /// connection that waits long for its next read must not hold written bytes back meanwhile.
    private var claimsEachRead = true

    /// How many of `count` bytes just read may be written, claiming more when the lease does not cover
    /// them. `room` is how many bytes of the answer lie past the lease (no claim reaches beyond the
    /// answer); `exchange(commit, claim)` commits and claims in one look at the scheduler and returns
    /// the bytes granted with the connection's rate. Fewer than `count`: the range was cut there.
    mutating func allow(
        _ count: Int64, room: Int64, exchange: (_ commit: Int64, _ claim: Int64) -> (Int64, Double)
    ) -> Int64 {
        if leased >= count {
            leased -= count
            return count
        }
        let ahead = min(Self.most, Int64(rate * Self.span))
        claimsEachRead = ahead <= count - leased
        let want = min(max(count - leased, ahead), room)
        let (granted, measured) = exchange(pending, want)
        pending = 0
        rate = measured
        let available = leased + granted
        let allowed = min(count, available)
        leased = available - allowed
        return allowed
    }

    /// `count` bytes allowed by ``allow(_:room:exchange:)`` are in the file. Returns how many written
    /// bytes to commit now (0: they wait for the next exchange, a few milliseconds away).
    mutating func wrote(_ count: Int64) -> Int64 {
        pending += count
        guard claimsEachRead, leased == 0 else { return 0 }
        defer { pending = 0 }
        return pending
    }

    /// The answer ended or failed: commits what is written and gives back what was claimed and not
    /// read, through `settle(commit, unclaim)`.
    mutating func settle(_ settle: (_ commit: Int64, _ unclaim: Int64) -> Void) {
        guard pending > 0 || leased > 0 else { return }
        settle(pending, leased)
        pending = 0
        leased = 0
    }
}
