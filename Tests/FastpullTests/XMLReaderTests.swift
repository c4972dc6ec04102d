import Testing

@testable import Fastpull
@testable import FastpullEngine

/// The XML reader under Metalink: what a well-formed document gives, and what is refused.
@Suite("XML reader")
struct XMLReaderTests {
    /// The events of `document` as text, one per element start, text and end.
    static func events(_ document: String) throws(XMLReader.Failure) -> [String] {
        var events: [String] = []
        try XMLReader.read(Array(document.utf8)) { event in
            switch event {
            case .start(let name, let namespace, let attributes):
                let sorted = attributes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                events.append("<\(namespace ?? "-")|\(name) \(sorted.joined(separator: " "))>")
            case .text(let text):
                events.append("'\(text)'")
            case .end(let name, let namespace):
                events.append("</\(namespace ?? "-")|\(name)>")
            }
            return true
        }
        return events
    }

    @Test func elementsTextAttributesAndNamespaces() throws {
        let events = try Self.events(
            """
            \u{FEFF}<?xml version="1.0" encoding="utf-8"?>
            <!-- a comment --><?stylesheet x?>
            <!DOCTYPE m SYSTEM "m.dtd">
            <m xmlns="urn:a" xmlns:b="urn:b" x='1 &amp; 2'>A&lt;&#65;&#x42;<![CDATA[<&>]]><b:e y="a\tb"/></m>
            """)
        #expect(
            events == [
                "<urn:a|m x=1 & 2>", "'A<AB'", "'<&>'", "<urn:b|e y=a b>", "</urn:b|e>", "</urn:a|m>",
            ])
    }

    @Test func aDefaultNamespaceIsScopedToItsElement() throws {
        let events = try Self.events(#"<a><b xmlns="urn:x"><c/></b><d/></a>"#)
        #expect(
            events == [
                "<-|a >", "<urn:x|b >", "<urn:x|c >", "</urn:x|c>", "</urn:x|b>", "<-|d >", "</-|d>",
                "</-|a>",
            ])
    }

    @Test func readingStopsWhenAsked() throws {
        var seen = 0
        try XMLReader.read(Array("<a><b/><c/></a>".utf8)) { _ in
            seen += 1
            return seen < 2
        }
        #expect(seen == 2)
    }

    @Test(arguments: [
        ("<a><b></a>", "matches no open element", 1),
        ("<a>", "ends inside <a>", 1),
        ("<a></a><b/>", "a second root element", 1),
        ("<a/>\ntext", "text after the root element", 2),
        ("<a x=1/>", "without quotes", 1),
        ("<a x='1' x='2'/>", "twice in one tag", 1),
        ("<a>&nbsp;</a>", "not one of XML's", 1),
        ("<a>&#0;</a>", "not one of XML's", 1),
        ("<a>& b</a>", "starts no reference", 1),
        ("<a x='<'/>", "'<' inside an attribute value", 1),
        ("<p:a/>", "'p' is not declared", 1),
        ("<!DOCTYPE a [<!ENTITY e \"x\">]><a>&e;</a>", "document type with declarations", 1),
        ("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a/>", "is not UTF-8", 1),
        ("", "has no element", 1),
        ("<a><!-- open", "ends inside a comment", 1),
    ])
    func refusesWhatIsNotWellFormed(_ document: String, _ reason: String, _ line: Int) {
        #expect {
            _ = try Self.events(document)
        } throws: { error in
            guard let failure = error as? XMLReader.Failure else { return false }
            return failure.reason.contains(reason) && failure.line == line
        }
    }

    @Test func refusesBytesThatAreNotUTF8() {
        #expect(throws: XMLReader.Failure(line: 1, reason: "it is not UTF-8 text")) {
            try XMLReader.read([0x3C, 0x61, 0xFF, 0x2F, 0x3E]) { _ in true }
        }
    }
}
