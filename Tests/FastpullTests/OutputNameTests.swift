import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine

@Suite("Output names and Content-Disposition")
struct OutputNameTests {
    let url = URL(string: "https://example.org/files/release%20notes.txt?x=1")!

    @Test func fromTheURL() {
        #expect(OutputName.derive(from: url, contentDisposition: nil) == "release notes.txt")
        #expect(OutputName.derive(from: URL(string: "http://h/")!, contentDisposition: nil) == "index.html")
        #expect(OutputName.derive(from: URL(string: "http://h")!, contentDisposition: nil) == "index.html")
        #expect(
            OutputName.derive(from: URL(string: "http://h/a/..")!, contentDisposition: nil) == "index.html")
        // Decoded once only: %2541 is "%41", not "A".
        #expect(OutputName.derive(from: URL(string: "http://h/x%2541")!, contentDisposition: nil) == "x%41")
        // An encoded slash does not make a folder.
        #expect(
            OutputName.derive(from: URL(string: "http://h/a%2F..%2Fetc%2Fpasswd")!, contentDisposition: nil)
                == "passwd")
        #expect(
            OutputName.derive(from: URL(string: "http://h/.bashrc")!, contentDisposition: nil) == "bashrc")
    }

    @Test(arguments: [
        ("attachment; filename=\"report.pdf\"", "report.pdf"),
        ("attachment; filename=report.pdf", "report.pdf"),
        ("ATTACHMENT; FILENAME=\"a b.txt\"", "a b.txt"),
        ("inline; filename=\"q\\\"uote.txt\"", "q\"uote.txt"),
        ("attachment; filename=\"plain.txt\"; filename*=UTF-8''%E2%82%AC%20rates.txt", "€ rates.txt"),
        ("attachment; filename*=UTF-8''%E2%82%AC.txt; filename=\"fallback.txt\"", "€.txt"),
        ("attachment; filename*=iso-8859-1'en'%A3%20rates.txt", "£ rates.txt"),
        ("attachment; filename*=UTF-8''bad%ZZ; filename=\"good.txt\"", "good.txt"),
        ("attachment; filename*=koi8-r''x; filename=\"good.txt\"", "good.txt"),
    ])
    func contentDispositionNames(header: String, expected: String) {
        #expect(OutputName.derive(from: url, contentDisposition: header) == expected)
    }

    @Test(arguments: [
        ("attachment; filename=\"../../etc/passwd\"", "passwd"),
        ("attachment; filename=\"..\\\\..\\\\windows\\\\system.ini\"", "system.ini"),
        ("attachment; filename=\"/etc/shadow\"", "shadow"),
        ("attachment; filename=\".bashrc\"", "bashrc"),
        ("attachment; filename=\"...hidden\"", "hidden"),
        ("attachment; filename*=UTF-8''%2E%2E%2F%2E%2E%2Fx.sh", "x.sh"),
        ("attachment; filename*=UTF-8''a%0Ab%0D%00c%1B%5B31m.txt", "abc[31m.txt"),
        ("attachment; filename*=UTF-8''evil%E2%80%AEtxt.exe", "eviltxt.exe"),
        ("attachment; filename*=UTF-8''%C2%85x%7F.bin", "x.bin"),
        ("attachment; filename=\"  spaced.txt  \"", "spaced.txt"),
    ])
    func hostileNamesAreMadeSafe(header: String, expected: String) {
        let name = OutputName.derive(from: url, contentDisposition: header)
        #expect(name == expected)
        #expect(!name.contains("/") && !name.contains("\\") && !name.hasPrefix("."))
        #expect(!name.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F })
    }

    @Test(arguments: [
        "attachment; filename=\"..\"", "attachment; filename=\".\"", "attachment; filename=\"/\"",
        "attachment; filename=\"\"", "attachment; filename=\"../\"", "attachment",
        "attachment; filename=\"unclosed",
        "attachment; filename*=UTF-8''%00%01", "",
    ])
    func uselessNamesFallBackToTheURL(header: String) {
        #expect(OutputName.derive(from: url, contentDisposition: header) == "release notes.txt")
    }

    /// A document's relative path (a Metalink file's name) goes through the same sanitizer, component
    /// by component; one that is absolute or climbs out of its folder is refused.
    @Test func relativePathsAreMadeSafeComponentByComponent() {
        #expect(OutputName.sanitizeRelativePath("docs/a.txt") == "docs/a.txt")
        #expect(OutputName.sanitizeRelativePath("ev\u{1B}[31mil/\u{202E}gpj.exe") == "ev[31mil/gpj.exe")
        #expect(OutputName.sanitizeRelativePath("a\u{2066}b\u{061C}c\u{2028}.txt") == "abc.txt")
        #expect(OutputName.sanitizeRelativePath(".config/x") == "config/x")
        for refused in ["", "/etc/passwd", "../x", "a/../x", "a//b", "./a", "a/", "\u{1B}/a", "a/\u{202E}"] {
            #expect(OutputName.sanitizeRelativePath(refused) == nil, "\(refused.debugDescription)")
        }
    }

    @Test func longNamesKeepTheirExtension() throws {
        let long = String(repeating: "é", count: 300) + ".tar.gz"
        let name = try #require(OutputName.sanitize(long))
        #expect(name.utf8.count <= OutputName.maximumBytes)
        #expect(name.utf8.count + JournalStore.longestSuffix.utf8.count <= 255)
        #expect(name.hasSuffix(".gz"))
    }

    /// Plain ASCII names are kept as they are, but only when nothing about them needs changing.
    @Test func plainNamesPassAndOthersAreStillMended() throws {
        #expect(OutputName.sanitize("model-00001-of-00004.safetensors") == "model-00001-of-00004.safetensors")
        #expect(OutputName.sanitize("a b") == "a b")
        #expect(OutputName.sanitize(" a") == "a")
        #expect(OutputName.sanitize("a ") == "a")
        #expect(OutputName.sanitize(".a") == "a")
        #expect(OutputName.sanitize("a\\b") == "b")
        #expect(OutputName.sanitize("a\tb") == "ab")
        let long = try #require(OutputName.sanitize(String(repeating: "a", count: 300) + ".bin"))
        #expect(long.utf8.count == OutputName.maximumBytes)
        #expect(long.hasSuffix(".bin"))
        // The last non-empty component of the path, a trailing slash or not.
        #expect(
            OutputName.derive(from: URL(string: "http://h/d/file.bin/")!, contentDisposition: nil)
                == "file.bin")
        #expect(OutputName.derive(from: URL(string: "http://h//x//")!, contentDisposition: nil) == "x")
    }

    @Test func parametersAreParsed() {
        let parameters = ContentDisposition.parameters(of: "attachment; a=1; b=\"x;y\"; junk; C = 3")
        #expect(parameters.map(\.name) == ["a", "b", "c"])
        #expect(parameters.map(\.value) == ["1", "x;y", "3"])
    }
}
