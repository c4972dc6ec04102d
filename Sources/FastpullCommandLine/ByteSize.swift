import Fastpull

/// Sizes and rates as people type them: `1048576`, `512K`, `1M`, `2G`, `1KiB`, `1MiB`, `1GiB`, with or
/// without `B`, suffixes in either case; every unit is a power of 1024. A rate may end in `/s`.
package enum ByteSize {
    private static let units: [(suffix: String, multiplier: Int64)] = [
        ("kib", 1 << 10), ("mib", 1 << 20), ("gib", 1 << 30),
        ("kb", 1 << 10), ("mb", 1 << 20), ("gb", 1 << 30),
        ("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30), ("b", 1),
    ]

    /// The number of bytes, or nil for anything else (negative, fractional, overflowing, unknown
    /// unit).
    package static func parse(_ text: String) -> Int64? {
        let lowered = text.lowercased()
        for (suffix, multiplier) in units where lowered.hasSuffix(suffix) {
            let number = lowered.dropLast(suffix.count)
            guard !number.isEmpty, number.allSatisfy(\.isASCII), let value = Int64(number), value >= 0 else {
                return nil
            }
            let (product, overflow) = value.multipliedReportingOverflow(by: multiplier)
            return overflow ? nil : product
        }
        guard !lowered.isEmpty, lowered.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int64(lowered)
    }

    /// Bytes per second from `500K/s`, `2MiB/s`, `2M` or `1000`; nil for anything else.
    package static func parseRate(_ text: String) -> Int64? {
        var body = Substring(text)
        for suffix in ["/s", "/S", "ps"] where body.hasSuffix(suffix) {
            body = body.dropLast(suffix.count)
            break
        }
        return parse(String(body))
    }
}
