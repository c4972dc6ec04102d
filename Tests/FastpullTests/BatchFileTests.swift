import Foundation
import Testing

@testable import Fastpull
@testable import FastpullCommandLine
@testable import FastpullEngine

@Suite("Batch input files")
struct BatchFileTests {
    let hex = String(repeating: "ab", count: 32)

    @Test func linesCommentsBlanksAndCRLF() throws {
        let text = """
            # artifacts\r
            \r
            https://h.test/a.iso\r
              http://h.test/b  b.bin  sha256=\(hex)\r
            \t# indented comment
            http://h.test/c sha256=\(hex) "out dir/c \\"q\\".bin" md5=\(String(repeating: "0", count: 32))

            """
        let lines = try BatchFile.parse(text, source: "list.txt")
        #expect(lines.map(\.number) == [3, 4, 6])
        #expect(lines[0].url.absoluteString == "https://h.test/a.iso")
        #expect(lines[0].output == nil)
        #expect(lines[0].checksums.isEmpty)
        #expect(lines[1].output == "b.bin")
        #expect(lines[1].checksums == [.sha256(hex)])
        #expect(lines[2].output == "out dir/c \"q\".bin")
        #expect(lines[2].checksums.map(\.algorithm) == ["sha256", "md5"])
    }

    /// Paths in any script survive the splitting whole, quoted or not, escaped or not.
    @Test func pathsOutsideASCIIStayWhole() throws {
        let text =
            "http://h.test/a  d\u{00F6}s/\u{1F4E6}.bin\nhttp://h.test/b \"\u{00FC}ber  n\\\u{00E9}\u{0301}\\\"e\"\n"
        let lines = try BatchFile.parse(text, source: "list.txt")
        #expect(lines.map(\.output) == ["d\u{00F6}s/\u{1F4E6}.bin", "\u{00FC}ber  n\u{00E9}\u{0301}\"e"])
    }

    /// Further URLs on a line are other sources of the file, tab-separated as aria2 writes them (or
    /// space-separated); a bad one names the line.
    @Test func furtherURLsOnALineAreMirrors() throws {
        let lines = try BatchFile.parse(
            "https://a.test/x.iso\tHTTPS://b.test/x.iso\thttp://c.test/pub/x.iso  x.iso sha256=\(hex)\n",
            source: "list.txt")
        #expect(lines.count == 1)
        let mirrors = lines[0].mirrors.map(\.absoluteString)
        #expect(mirrors == ["HTTPS://b.test/x.iso", "http://c.test/pub/x.iso"])
        #expect(lines[0].output == "x.iso")
        #expect(lines[0].checksums == [.sha256(hex)])
        #expect(throws: UsageError.self) {
            _ = try BatchFile.parse("https://a.test/x http://\n", source: "list.txt")
        }
    }

    @Test func aPathWithAnEqualsSignIsAPath() throws {
        let lines = try BatchFile.parse("http://h/x a=b.bin", source: "l")
        #expect(lines.first?.output == "a=b.bin")
    }

    @Test func emptyInput() throws {
        #expect(try BatchFile.parse("", source: "l").isEmpty)
        #expect(try BatchFile.parse("\n# only\n\n", source: "l").isEmpty)
    }

    @Test(arguments: [
        ("ftp://h/x", "error: list:1: unsupported scheme 'ftp'"),
        ("http://h/x a b", "error: list:1: unexpected 'b'"),
        ("# c\nhttp://h/x sha256=12", "error: list:2: a sha256 checksum is 64 hexadecimal digits"),
        ("http://h/x \"open", "error: list:1: unclosed quote"),
        ("not a url", "error: list:1: 'not' is not a valid URL"),
        ("http://h/x \"\"", "error: list:1: empty output path"),
    ])
    func errorsNameTheLine(text: String, message: String) {
        do {
            _ = try BatchFile.parse(text, source: "list")
            Issue.record("expected an error for \(text)")
        } catch {
            #expect(error.message.hasPrefix(message), "\(error.message)")
        }
    }

    @Test func standardInputIsNamed() {
        #expect(throws: UsageError.self) { try BatchFile.parse("bad", source: "-") }
        do {
            _ = try BatchFile.parse("bad", source: "-")
        } catch {
            #expect(error.message.hasPrefix("error: standard input:1: "))
        }
    }

    /// Read a line at a time (`-i -`): an entry is handed out when the next URL line completes it or
    /// at a flush; a bad URL line hands out the entry before it and drops its own option lines (they
    /// are nobody's: before, they went to the entry before it, a header to another host); a bad
    /// option line drops its entry (never fetched without what its list gave it); an option line
    /// after a flush is said to have come too late.
    @Test func aReaderDropsWhatABadLineSpoils() {
        var reader = BatchFile.Reader(source: "-")
        func read(_ line: String) -> BatchFile.Reader.Read { reader.read(Substring(line)) }
        #expect(read("https://h.test/a").completed == nil)
        let bad = read("htp:/bad")
        #expect(bad.completed?.url.absoluteString == "https://h.test/a")
        #expect(bad.problem?.message.hasPrefix("error: standard input:2: ") == true)
        #expect(read("  out=secret.bin").problem == nil)
        #expect(read("  header=X-Token: t").problem == nil)
        #expect(read("https://h.test/b").completed == nil)
        let spoiled = read("  checksum=sha-256=nothex")
        #expect(spoiled.problem?.message.hasPrefix("error: standard input:6: checksum=") == true)
        #expect(read("  out=b.bin").problem == nil)
        let next = read("https://h.test/c")
        #expect(next.completed == nil, "an entry with a bad option line was handed out")
        #expect(read("  out=c.bin").problem == nil)
        let flushed = reader.flush()
        #expect(flushed?.url.absoluteString == "https://h.test/c")
        #expect(flushed?.output == "c.bin")
        #expect(flushed?.headers.isEmpty == true)
        let late = read("  out=late.bin")
        #expect(late.problem?.message.contains("came after its file's download started") == true)
        #expect(reader.flush() == nil)
    }
}
