import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP

/// The text helpers that stand in for Foundation's: trimming, percent decoding, padding, printf.
@Suite("Text")
struct TextTests {
    /// What a terminal is given: control characters, direction overrides and line separators escaped,
    /// everything else as it is.
    @Test func controlCharactersAreEscapedForTheTerminal() {
        #expect("saving to /tmp/a b.bin".escapedForTerminal == "saving to /tmp/a b.bin")
        #expect("été €".escapedForTerminal == "été €")
        #expect("red\u{1B}[31m!".escapedForTerminal == "red\\x1B[31m!")
        #expect("a\nb\rc\td\u{0}e\u{7F}".escapedForTerminal == "a\\nb\\rc\\td\\x00e\\x7F")
        #expect("evil\u{202E}txt.exe\u{9B}".escapedForTerminal == "evil\\u{202E}txt.exe\\x9B")
        #expect("\u{2066}x\u{2028}".escapedForTerminal == "\\u{2066}x\\u{2028}")
    }

    @Test func trimmingKeepsLineBreaksOrNot() {
        #expect(" \t a b \u{00A0}".trimmingSpaces() == "a b")
        #expect("\n a \n".trimmingSpaces() == "\n a \n")
        #expect("\r\n a b\n\t".trimmingSpacesAndLines() == "a b")
        #expect("   ".trimmingSpaces() == "")
        #expect(Substring("x ").trimmingSpaces() == "x")
    }

    @Test func percentDecoding() {
        #expect("a%20b%2Fc".percentDecoded == "a b/c")
        #expect("%C3%A9t%c3%a9".percentDecoded == "été")
        #expect("100%".percentDecoded == nil)
        #expect("%zz".percentDecoded == nil)
        #expect("%FF".percentDecoded == nil)
        #expect("plain".percentDecoded == "plain")
    }

    @Test func paddingCutsOrFills() {
        #expect("ab".padded(to: 4) == "ab  ")
        #expect("abcdef".padded(to: 3) == "abc")
        #expect("é".padded(to: 2) == "é ")
    }

    @Test func printfFormatsNumbersAsC() {
        #expect(ByteFormat.printf("%.3f", 1.23456) == "1.235")
        #expect(ByteFormat.printf("%02ld", 7) == "07")
        #expect(ByteFormat.printf("\\u%04x", UInt32(0x1F)) == "\\u001f")
        #expect(ByteFormat.printf("%3.0f%%", 42.4) == " 42%")
        #expect(ByteFormat.printf("%.1f", 1e300).count > 64)
        #expect(ByteFormat.duration(245) == "4m05s")
        #expect(ByteFormat.size(1536) == "1.5 KiB")
    }
}
