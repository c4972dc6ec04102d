import FastpullHTTP

extension RateLimiter {
    /// A limiter for `rate` bytes per second, nil for no limit; a usage error for a rate below 1.
    static func make(_ rate: Int64?) throws(FastpullError) -> RateLimiter? {
        guard let rate else { return nil }
        guard rate > 0 else {
            throw FastpullError(.usage, "the rate limit must be at least 1 byte per second, got \(rate)")
        }
        return RateLimiter(bytesPerSecond: rate)
    }
}
