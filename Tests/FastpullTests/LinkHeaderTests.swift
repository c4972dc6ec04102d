import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine

/// `Link` fields as RFC 6249 uses them.
@Suite("Link header (RFC 6249)")
struct LinkHeaderTests {
    let base = URL(string: "https://origin.test/pub/x.iso")!

    @Test func duplicatesByPriorityThenOrder() {
        let header = LinkHeader(values: [
            "<http://b.test/x.iso>; rel=duplicate; pri=2; geo=de, <ftp://f.test/x.iso>; rel=duplicate; pri=1",
            "<https://a.test/x.iso>; rel=\"duplicate\"; pri=1",
            "</mirror/x.iso>; rel=duplicate",
            "<https://origin.test/x.meta4>; rel=describedby; type=\"application/metalink4+xml\"",
            "<https://origin.test/next>; rel=next",
        ])
        #expect(
            header.duplicates(base: base).map(\.absoluteString) == [
                "https://a.test/x.iso", "http://b.test/x.iso", "https://origin.test/mirror/x.iso",
            ])
        #expect(header.metalink(base: base)?.absoluteString == "https://origin.test/x.meta4")
    }

    @Test func aCommaInsideQuotesOrTheTargetDoesNotSplit() {
        let links = LinkHeader.parse(
            "<http://a.test/x,y>; rel=duplicate; title=\"a, b\", <http://c.test/z>; rel=duplicate")
        #expect(links.map(\.target) == ["http://a.test/x,y", "http://c.test/z"])
        #expect(links[0].parameters["title"] == "a, b")
    }

    @Test func malformedLinksAreSkipped() {
        #expect(LinkHeader(values: ["rel=duplicate", "<unclosed; rel=duplicate", ""]).links.isEmpty)
    }
}
