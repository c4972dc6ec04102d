import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP

/// HTTP dates, read by hand (IMF-fixdate only).
@Suite("HTTPDate")
struct HTTPDateTests {
    @Test func knownDates() {
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT")?.timeIntervalSince1970 == 784_111_777)
        #expect(HTTPDate.parse("Thu, 01 Jan 1970 00:00:00 GMT")?.timeIntervalSince1970 == 0)
        #expect(HTTPDate.parse("Thu, 29 Feb 2024 12:00:00 GMT")?.timeIntervalSince1970 == 1_709_208_000)
        #expect(HTTPDate.parse("  Sat, 01 Jan 2000 00:00:00 GMT ")?.timeIntervalSince1970 == 946_684_800)
    }

    /// Every second a formatter writes in IMF-fixdate reads back as itself.
    @Test func readsWhatAFormatterWrites() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var seed: UInt64 = 12
        for _ in 0..<2000 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let seconds = TimeInterval(seed >> 33 % 5_000_000_000)
            let text = formatter.string(from: Date(timeIntervalSince1970: seconds))
            #expect(HTTPDate.parse(text)?.timeIntervalSince1970 == seconds, "\(text)")
        }
    }

    @Test(arguments: [
        "Sunday, 06-Nov-94 08:49:37 GMT",  // RFC 850
        "Sun Nov  6 08:49:37 1994",  // asctime
        "Sun, 06 Nov 1994 08:49:37 PST",
        "Sun, 31 Feb 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:49:37 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT",
        "Sun, 0x Nov 1994 08:49:37 GMT",
        "",
    ])
    func anythingElseIsNoDate(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }
}
