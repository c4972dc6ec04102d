import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine

/// Reading Metalink 4 documents (RFC 5854).
@Suite("Metalink")
struct MetalinkTests {
    static let sha256 = String(repeating: "ab", count: 32)
    static let sha1 = String(repeating: "cd", count: 20)

    static func document(_ files: String) -> Data {
        Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <published>2026-11-30T12:00:00Z</published>
              \(files)
            </metalink>
            """.utf8)
    }

    @Test func readsSizeHashesPiecesAndSourcesInPriorityOrder() throws {
        let metalink = try Metalink(
            parsing: Self.document(
                """
                <file name="model.bin">
                  <size>2621440</size>
                  <hash type="md5">\(String(repeating: "0", count: 32))</hash>
                  <hash type="sha-256">\(Self.sha256.uppercased())</hash>
                  <hash type="sha-384">\(String(repeating: "1", count: 96))</hash>
                  <pieces length="1048576" type="sha-1">
                    <hash>\(Self.sha1)</hash><hash>\(Self.sha1)</hash><hash>\(Self.sha1)</hash>
                  </pieces>
                  <url priority="2" location="de">http://b.example/model.bin</url>
                  <url>https://c.example/model.bin</url>
                  <url priority="1">https://a.example/model.bin</url>
                  <url priority="1">ftp://ftp.example/model.bin</url>
                  <metaurl mediatype="torrent" priority="1">http://a.example/model.torrent</metaurl>
                </file>
                """))
        let file = try #require(metalink.files.first)
        #expect(file.name == "model.bin")
        #expect(file.size == 2_621_440)
        #expect(file.checksums == [.sha256(Self.sha256), .md5(String(repeating: "0", count: 32))])
        #expect(file.pieces?.length == 1 << 20)
        #expect(file.pieces?.hashes == Array(repeating: .sha1(Self.sha1), count: 3))
        #expect(
            file.urls.map(\.absoluteString) == [
                "https://a.example/model.bin", "http://b.example/model.bin", "https://c.example/model.bin",
            ])
        #expect(file.sources[1].location == "de" && file.sources[1].priority == 2)
        let configuration = file.configuration()
        #expect(configuration.sources.mirrors == Array(file.urls.dropFirst()))
        #expect(configuration.integrity.checksums.isEmpty)
        #expect(
            configuration.integrity.describedChecksums
                == .init(document: "the Metalink file", checksums: [.sha256(Self.sha256)]))
        #expect(configuration.integrity.expectedSize == 2_621_440)
        #expect(configuration.integrity.pieceHashes == file.pieces)
    }

    /// A document's names are made safe as a server's `Content-Disposition` names are: escape
    /// sequences and direction overrides never reach the file system (they did, and the terminal).
    @Test func namesAreMadeSafeAsServersNamesAre() throws {
        let metalink = try Metalink(
            parsing: Self.document(
                """
                <file name="evil&#x1B;[31m&#x202E;gpj.exe"><url>http://x.example/a</url></file>
                <file name="d&#x2067;ir/.b&#x9B;.txt"><url>http://x.example/b</url></file>
                """))
        #expect(metalink.files.map(\.name) == ["evil[31mgpj.exe", "dir/b.txt"])
    }

    @Test func readsEveryFile() throws {
        let metalink = try Metalink(
            parsing: Self.document(
                """
                <file name="a.txt"><url>http://x.example/a.txt</url></file>
                <file name="docs/b.txt"><url>http://x.example/b.txt</url></file>
                """))
        #expect(metalink.files.map(\.name) == ["a.txt", "docs/b.txt"])
        #expect(metalink.files[0].size == nil && metalink.files[0].checksums.isEmpty)
    }

    @Test(arguments: [
        ("<file name=\"../etc/passwd\"><url>http://x/a</url></file>", "not a safe relative path"),
        ("<file name=\"/etc/passwd\"><url>http://x/a</url></file>", "not a safe relative path"),
        ("<file name=\"a\"><url>ftp://x/a</url></file>", "no http or https URL"),
        ("<file name=\"a\"><size>-1</size><url>http://x/a</url></file>", "the size '-1'"),
        ("<file name=\"a\"><hash type=\"sha-256\">abc</hash><url>http://x/a</url></file>", "sha-256 hash"),
        ("<file><url>http://x/a</url></file>", "without a name"),
        (
            "<file name=\"a\"><url>http://x/a</url></file><file name=\"a\"><url>http://y/a</url></file>",
            "twice"
        ),
        ("", "describes no file"),
        ("<file name=\"a\"><url>http://x/a</url>", "not well-formed XML"),
    ])
    func refusesWhatItCannotUse(_ files: String, _ problem: String) {
        #expect {
            _ = try Metalink(parsing: Self.document(files))
        } throws: { error in
            guard let error = error as? FastpullError else { return false }
            return error.code == .usage && error.message.contains(problem)
        }
    }

    @Test func namesMetalinkThreeAndOtherDocuments() {
        let three = Data(
            "<metalink version=\"3.0\" xmlns=\"http://www.metalinker.org/\"><files/></metalink>".utf8)
        #expect(
            throws: FastpullError(
                .usage, "the Metalink file is Metalink 3; only Metalink 4 (RFC 5854, .meta4) is read")
        ) {
            _ = try Metalink(parsing: three)
        }
        #expect {
            _ = try Metalink(parsing: Data("<html><body>not found</body></html>".utf8))
        } throws: { error in
            (error as? FastpullError)?.message.contains("no <metalink> element") == true
        }
    }

    @Test func knowsItsMediaType() {
        #expect(Metalink.isMediaType("application/metalink4+xml"))
        #expect(Metalink.isMediaType("Application/Metalink4+XML; charset=utf-8"))
        #expect(!Metalink.isMediaType("application/xml"))
        #expect(!Metalink.isMediaType("application/octet-stream"))
        #expect(!Metalink.isMediaType(nil))
    }

    /// A batch follows a URL named `.meta4` (any case) as a Metalink document, and nothing else.
    @Test(arguments: [
        ("http://h/x.meta4", true), ("http://h/a/B.META4", true), ("http://h/x.meta4/", true),
        ("http://h/x.meta4?q=1", true), ("http://h/x%2Emeta4", true), ("http://h/x..meta4", true),
        ("http://h/.meta4", false), ("http://h/meta4", false), ("http://h/x.meta4.bin", false),
        ("http://h/x.meta", false), ("http://h/", false), ("http://h/x.meta4z", false),
        ("http://h/..meta4", false), ("http://h/a/...meta4", false), ("http://h/.x.meta4", true),
    ])
    func metalinkNames(url: String, expected: Bool) throws {
        #expect(Batch.hasMetalinkName(try #require(URL(string: url))) == expected)
    }
}
