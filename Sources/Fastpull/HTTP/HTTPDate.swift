import Foundation

/// HTTP dates (RFC 9110 §5.6.7), as `Date`, `Last-Modified` and `Retry-After` carry them.
enum HTTPDate {
    /// Parses the preferred IMF-fixdate form, `Sun, 06 Nov 1994 08:49:37 GMT`; nil for anything else.
    static func parse(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text.trimmingCharacters(in: .whitespaces))
    }

    /// Whether `lastModified` may stand for one version in `If-Range`: it must lie well before the
    /// server's `date` (RFC 9110 §8.8.2.2 asks for a second; Apache answers an `If-Range` date as a
    /// mismatch until a minute has passed, so a minute it is). Without a `Date` there is no telling.
    static func isStrongValidator(lastModified: String, date: String?) -> Bool {
        guard let date, let sent = parse(date), let modified = parse(lastModified) else { return false }
        return sent.timeIntervalSince(modified) >= 60
    }
}
