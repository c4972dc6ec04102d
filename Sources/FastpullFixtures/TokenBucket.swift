import Synchronization

/// A token bucket for bytes: it refills at `bytesPerSecond`, holds at most `burst` bytes, and starts empty,
/// so a sender that waits as told never exceeds the rate by more than one burst.
///
/// `reserve` lets the bucket go into debt and returns how long the caller must wait before sending, so
/// several senders sharing one bucket queue up behind each other instead of polling. Time is passed in,
/// which keeps the arithmetic testable without clocks.
struct TokenBucket: Sendable {
    /// The refill rate in bytes per second (at least 1).
    let bytesPerSecond: Int
    /// The most bytes the bucket saves up while nobody sends.
    let burst: Int
    private var tokens: Double = 0
    private var lastRefill: Int64?

    /// Creates an empty bucket; `burst` defaults to one slice for that rate.
    init(bytesPerSecond: Int, burst: Int? = nil) {
        self.bytesPerSecond = max(1, bytesPerSecond)
        self.burst = max(1, burst ?? Self.sliceSize(forRate: bytesPerSecond))
    }

    /// How many bytes a rate-limited sender should send at a time: about 1/20 s of traffic, between
    /// 1 byte and 64 KiB, so that waits stay short and the rate is smooth.
    static func sliceSize(forRate bytesPerSecond: Int) -> Int {
        max(1, min(64 * 1024, bytesPerSecond / 20))
    }

    /// Takes `count` bytes of tokens at time `now` (nanoseconds on a monotonic clock) and returns the
    /// nanoseconds to wait before sending them (0 when the bucket had enough).
    mutating func reserve(_ count: Int, now: Int64) -> Int64 {
        let rate = Double(bytesPerSecond)
        if let lastRefill, now > lastRefill {
            tokens = min(Double(burst), tokens + Double(now - lastRefill) * rate / 1e9)
        }
        lastRefill = max(lastRefill ?? now, now)
        tokens -= Double(count)
        guard tokens < 0 else { return 0 }
        return Int64((-tokens / rate * 1e9).rounded(.up))
    }

    /// Gives back `count` bytes reserved and not sent (the peer closed the connection first), as a
    /// rate limiter cancels a wait (Go's `rate.Limiter`): the bucket is not left paying for bytes
    /// nobody received. It never holds more than `burst`.
    mutating func refund(_ count: Int) {
        tokens = min(Double(burst), tokens + Double(count))
    }
}

/// A token bucket shared by every connection of a server (the `totalRate` limit).
final class SharedTokenBucket: Sendable {
    private let bucket: Mutex<TokenBucket>

    /// Creates an empty shared bucket for `bytesPerSecond`.
    init(bytesPerSecond: Int) {
        bucket = Mutex(TokenBucket(bytesPerSecond: bytesPerSecond))
    }

    /// The slice size that suits this bucket's rate.
    var sliceSize: Int { bucket.withLock { TokenBucket.sliceSize(forRate: $0.bytesPerSecond) } }

    /// Reserves `count` bytes now; returns the nanoseconds to wait before sending them.
    func reserve(_ count: Int, now: Int64) -> Int64 {
        bucket.withLock { $0.reserve(count, now: now) }
    }

    /// Gives back `count` bytes reserved and not sent.
    func refund(_ count: Int) {
        bucket.withLock { $0.refund(count) }
    }
}
