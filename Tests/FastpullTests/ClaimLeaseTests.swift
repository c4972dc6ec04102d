import Testing

@testable import Fastpull
@testable import FastpullEngine

@Suite("ClaimLease: claims and commits settled a few milliseconds at a time")
struct ClaimLeaseTests {
    /// A stand-in for the scheduler: grants what is asked up to `limit`, records every exchange.
    final class Ledger {
        var limit: Int64
        var rate: Double
        var exchanges: [(commit: Int64, claim: Int64)] = []
        var claimed: Int64 = 0
        var committed: Int64 = 0
        /// What each write committed at once (0: left for the next exchange).
        var committedAtOnce: [Int64] = []

        init(limit: Int64 = .max, rate: Double = 0) {
            self.limit = limit
            self.rate = rate
        }

        func exchange(_ commit: Int64, _ claim: Int64) -> (Int64, Double) {
            exchanges.append((commit, claim))
            committed += commit
            let granted = min(claim, limit - claimed)
            claimed += granted
            return (granted, rate)
        }
    }

    /// Reads `count` bytes through `lease`, writing what is allowed; returns what was allowed. `room`:
    /// the bytes of the answer from this read on.
    @discardableResult
    func read(_ count: Int64, _ lease: inout ClaimLease, _ ledger: Ledger, room: Int64 = 1 << 30) -> Int64 {
        let allowed = lease.allow(count, room: room - lease.leased, exchange: ledger.exchange)
        let now = lease.wrote(allowed)
        ledger.committedAtOnce.append(now)
        ledger.committed += now
        return allowed
    }

    @Test func beforeItsRateIsKnownAConnectionClaimsEachReadAsItComes() {
        var lease = ClaimLease()
        let ledger = Ledger()
        for _ in 0..<3 { #expect(read(16_384, &lease, ledger) == 16_384) }
        #expect(ledger.exchanges.map(\.claim) == [16_384, 16_384, 16_384])
        // Each read's bytes are committed as soon as they are written: a connection that waits long
        // for its next read holds nothing back meanwhile.
        #expect(ledger.committedAtOnce == [16_384, 16_384, 16_384])
        #expect(ledger.exchanges.map(\.commit) == [0, 0, 0])
        #expect(lease.leased == 0)
        #expect(lease.pending == 0)
    }

    @Test func aMeasuredConnectionClaimsAFewMillisecondsAtOnce() {
        var lease = ClaimLease()
        // 50 MB/s: a lease of 4 ms is 200 000 bytes.
        let ledger = Ledger(rate: 50_000_000)
        read(16_384, &lease, ledger)
        // The rate came back with the first exchange; the second claims a lease.
        read(16_384, &lease, ledger)
        #expect(ledger.exchanges.count == 2)
        #expect(ledger.exchanges[1].claim == Int64(50_000_000 * ClaimLease.span))
        // Reads within the lease take no trip to the scheduler.
        let covered = (Int64(50_000_000 * ClaimLease.span) - 16_384) / 16_384
        for _ in 0..<covered { read(16_384, &lease, ledger) }
        #expect(ledger.exchanges.count == 2)
        // The read past it commits everything written since, and claims the next lease.
        read(16_384, &lease, ledger)
        #expect(ledger.exchanges.count == 3)
        #expect(ledger.exchanges[2].commit == 16_384 * (covered + 1))
        // Within a lease nothing is committed at once (the first read claimed for itself alone).
        #expect(ledger.committedAtOnce.dropFirst().allSatisfy { $0 == 0 })
    }

    @Test func aLeaseIsAtMostItsCeilingAndNeverPastTheAnswer() {
        var lease = ClaimLease()
        let ledger = Ledger(rate: 10e9)
        read(1000, &lease, ledger)
        read(1000, &lease, ledger)
        #expect(ledger.exchanges[1].claim == ClaimLease.most)
        var short = ClaimLease()
        let other = Ledger(rate: 10e9)
        // An answer of 5000 bytes: 1000 read, then 1000 more with 4000 left from there.
        read(1000, &short, other, room: 5000)
        read(1000, &short, other, room: 4000)
        // The lease stops at the answer's end.
        #expect(other.exchanges[1].claim == 4000)
    }

    @Test func aCutRangeAllowsOnlyWhatWasGranted() {
        var lease = ClaimLease()
        let ledger = Ledger(limit: 40_000, rate: 50_000_000)
        read(16_384, &lease, ledger)
        // Asks for 200 000, gets the 23 616 left before the cut: this read is whole, with a lease left.
        #expect(read(16_384, &lease, ledger) == 16_384)
        #expect(lease.leased == 40_000 - 2 * 16_384)
        // The next read runs into the cut.
        #expect(read(16_384, &lease, ledger) == 40_000 - 2 * 16_384)
        #expect(lease.leased == 0)
        #expect(read(16_384, &lease, ledger) == 0)
    }

    @Test func settlingCommitsWhatWasWrittenAndGivesBackWhatWasNotRead() {
        var lease = ClaimLease()
        let ledger = Ledger(rate: 50_000_000)
        read(16_384, &lease, ledger)
        read(16_384, &lease, ledger)
        var settled: [(Int64, Int64)] = []
        lease.settle { settled.append(($0, $1)) }
        #expect(settled.count == 1)
        #expect(settled.first?.0 == 16_384)
        #expect(settled.first?.1 == Int64(50_000_000 * ClaimLease.span) - 16_384)
        #expect(ledger.committed + (settled.first?.0 ?? 0) == 2 * 16_384)
        // Nothing is settled twice.
        lease.settle { settled.append(($0, $1)) }
        #expect(settled.count == 1)
    }
}
