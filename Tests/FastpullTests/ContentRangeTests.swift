import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP

@Suite("ContentRange")
struct ContentRangeTests {
    @Test(arguments: [
        ("bytes 0-4/10", ContentRange(first: 0, last: 4, completeLength: 10)),
        ("bytes 0-0/1", ContentRange(first: 0, last: 0, completeLength: 1)),
        ("bytes 9-9/10", ContentRange(first: 9, last: 9, completeLength: 10)),
        ("bytes 5-9/*", ContentRange(first: 5, last: 9, completeLength: nil)),
        ("bytes */10", ContentRange(first: nil, last: nil, completeLength: 10)),
        ("bytes */0", ContentRange(first: nil, last: nil, completeLength: 0)),
        ("Bytes 1-2/3", ContentRange(first: 1, last: 2, completeLength: 3)),
        ("BYTES */7", ContentRange(first: nil, last: nil, completeLength: 7)),
        ("bytes 00-01/010", ContentRange(first: 0, last: 1, completeLength: 10)),
        (
            "bytes 1073741824-2147483647/4294967296",
            ContentRange(first: 1 << 30, last: (1 << 31) - 1, completeLength: 1 << 32)
        ),
        (
            "bytes 0-9223372036854775806/9223372036854775807",
            ContentRange(first: 0, last: Int64.max - 1, completeLength: Int64.max)
        ),
        (
            "bytes 9223372036854775807-9223372036854775807/*",
            ContentRange(first: Int64.max, last: Int64.max, completeLength: nil)
        ),
    ])
    func parsesValidValues(value: String, expected: ContentRange) {
        #expect(ContentRange.parse(value) == expected)
    }

    @Test func count() {
        #expect(ContentRange.parse("bytes 0-4/10")?.count == 5)
        #expect(ContentRange.parse("bytes 7-7/*")?.count == 1)
        #expect(ContentRange.parse("bytes */10")?.count == nil)
    }

    @Test(arguments: [
        "",
        "bytes",
        "bytes ",
        "bytes 5-3/10",
        "bytes 0-10/10",
        "bytes 1-2/2",
        "bytes 0-0/0",
        "bytes -1-3/10",
        "bytes 0--3/10",
        "bytes -4/10",
        "bytes 0-/10",
        "bytes -/10",
        "bytes 0-4/-10",
        "bytes */-1",
        "bytes 0-4/+10",
        "bytes +0-4/10",
        "bytes  0-4/10",
        " bytes 0-4/10",
        "bytes 0-4/10 ",
        "bytes 0 -4/10",
        "bytes 0- 4/10",
        "bytes 0-4 /10",
        "bytes 0-4/ 10",
        "bytes\t0-4/10",
        "bytes=0-4/10",
        "bytes0-4/10",
        "items 0-4/10",
        "byte 0-4/10",
        "bytess 0-4/10",
        "bytes 0-4",
        "bytes 0-4/",
        "bytes /10",
        "bytes */*",
        "bytes *",
        "bytes */",
        "bytes 0-4/10/10",
        "bytes 0-4,6-7/10",
        "bytes 0x1-4/10",
        "bytes 0-4/1e2",
        "bytes 1.5-4/10",
        "bytes 0-9223372036854775808/*",
        "bytes 9223372036854775808-9223372036854775809/*",
        "bytes 0-4/9223372036854775808",
        "bytes */99999999999999999999",
        "bytes 0-4/*10",
        "bytes *-4/10",
    ])
    func rejectsInvalidValues(value: String) {
        #expect(ContentRange.parse(value) == nil)
    }
}
