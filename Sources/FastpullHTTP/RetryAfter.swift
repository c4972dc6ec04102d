import FoundationEssentials

/// The `Retry-After` field.
package enum RetryAfter {
    /// Parses `Retry-After`: delay-seconds or an HTTP-date, relative to `now`.
    package static func parse(_ value: String, now: Date = Date()) -> Duration? {
        let trimmed = value.trimmingSpaces()
        if let seconds = Int(trimmed), seconds >= 0 { return .seconds(seconds) }
        guard let date = HTTPDate.parse(trimmed) else { return nil }
        return .seconds(max(0, date.timeIntervalSince(now)))
    }
}
