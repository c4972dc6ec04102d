import FastpullHTTP

extension RateLimiter {
    /// A limiter for `rate` bytes per second under `overall` (a client's limit, when it has one); nil
    /// for no limit at all; a usage error for a rate below 1.
    static func make(_ rate: Int64?, overall: RateLimiter? = nil) throws(FastpullError) -> RateLimiter? {
        guard let rate else { return overall }
        guard rate > 0 else {
            throw FastpullError(.usage, "the rate limit must be at least 1 byte per second, got \(rate)")
        }
        return RateLimiter(bytesPerSecond: rate, parent: overall)
    }
}
