import FastpullNet
import FoundationEssentials

/// HTTP dates (RFC 9110 §5.6.7), as `Date`, `Last-Modified` and `Retry-After` carry them.
package enum HTTPDate {
    /// Parses the preferred IMF-fixdate form, `Sun, 06 Nov 1994 08:49:37 GMT`; nil for anything else.
    /// Read by hand: a `DateFormatter` made per response cost more CPU than a small file's transfer.
    package static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse(bytes: $0) }
    }

    private static let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ].map { Array($0.utf8) }
    private static let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].map { Array($0.utf8) }

    private static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        var start = 0
        var end = bytes.count
        while start < end, bytes[start] == UInt8(ascii: " ") || bytes[start] == UInt8(ascii: "\t") {
            start += 1
        }
        while end > start, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == UInt8(ascii: "\t") {
            end -= 1
        }
        // "Sun, 06 Nov 1994 08:49:37 GMT": 29 bytes at fixed places.
        guard end - start == 29 else { return nil }
        let b = UnsafeBufferPointer(rebasing: bytes[start..<end])
        func number(_ from: Int, _ count: Int) -> Int? {
            var value = 0
            for index in from..<(from + count) {
                let digit = Int(b[index]) - Int(UInt8(ascii: "0"))
                guard (0...9).contains(digit) else { return nil }
                value = value * 10 + digit
            }
            return value
        }
        func matches(_ from: Int, _ word: [UInt8]) -> Bool {
            word.indices.allSatisfy { b[from + $0] == word[$0] }
        }
        guard days.contains(where: { matches(0, $0) }), b[3] == UInt8(ascii: ","), b[4] == UInt8(ascii: " "),
            b[7] == UInt8(ascii: " "), b[11] == UInt8(ascii: " "), b[16] == UInt8(ascii: " "),
            b[19] == UInt8(ascii: ":"), b[22] == UInt8(ascii: ":"), b[25] == UInt8(ascii: " "),
            matches(26, Array("GMT".utf8)),
            let day = number(5, 2), let month = months.firstIndex(where: { matches(8, $0) }),
            let year = number(12, 4), let hour = number(17, 2), let minute = number(20, 2),
            let second = number(23, 2),
            day >= 1, day <= daysIn(month: month + 1, year: year), hour <= 23, minute <= 59, second <= 60
        else { return nil }
        let seconds =
            daysSinceEpoch(year: year, month: month + 1, day: day) * 86_400
            + hour * 3600 + minute * 60 + second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to the given day of the proleptic Gregorian calendar.
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        // Years counted from March, so that the leap day ends a year.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Whether `lastModified` may stand for one version in `If-Range`: it must lie well before the
    /// server's `date` (RFC 9110 §8.8.2.2 asks for a second; Apache answers an `If-Range` date as a
    /// mismatch until a minute has passed, so a minute it is). Without a `Date` there is no telling.
    package static func isStrongValidator(lastModified: String, date: String?) -> Bool {
        guard let date, let sent = parse(date), let modified = parse(lastModified) else { return false }
        return sent.timeIntervalSince(modified) >= 60
    }
}
