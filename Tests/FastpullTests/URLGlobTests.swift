import FastpullCommandLine
import Testing

/// curl's URL globbing: ranges, steps, letters and alternatives expand a URL into a batch.
@Suite("URL globbing")
struct URLGlobTests {
    @Test func rangesKeepTheFirstNumbersPaddingAndTheFirstPatternVariesSlowest() throws {
        #expect(
            try URLGlob.expand("http://h/model-[00001-00003]-of-00003.safetensors") == [
                "http://h/model-00001-of-00003.safetensors", "http://h/model-00002-of-00003.safetensors",
                "http://h/model-00003-of-00003.safetensors",
            ])
        #expect(
            try URLGlob.expand("http://h/{a,b}[1-2]") == [
                "http://h/a1", "http://h/a2", "http://h/b1", "http://h/b2",
            ])
        #expect(
            try URLGlob.expand("http://h/[8-11]") == [
                "http://h/8", "http://h/9", "http://h/10", "http://h/11",
            ])
        #expect(try URLGlob.expand("http://h/[0-10:5]") == ["http://h/0", "http://h/5", "http://h/10"])
        #expect(try URLGlob.expand("http://h/[x-z]") == ["http://h/x", "http://h/y", "http://h/z"])
        #expect(try URLGlob.expand("http://h/x{,.sig}") == ["http://h/x", "http://h/x.sig"])
    }

    @Test func whatIsNoPatternStaysAsItIs() throws {
        #expect(try URLGlob.expand("http://[::1]:8080/x") == ["http://[::1]:8080/x"])
        #expect(try URLGlob.expand("http://h/{x}") == ["http://h/{x}"])
        #expect(try URLGlob.expand("http://h/a") == ["http://h/a"])
    }

    @Test func aBadPatternSaysWhatIsWrong() {
        #expect(
            throws: UsageError(
                message:
                    "error: 'http://h/[5-1]': the range [5-1] runs backwards (use -g to turn globbing off)")
        ) {
            try URLGlob.expand("http://h/[5-1]")
        }
        #expect(
            throws: UsageError(
                message: "error: 'http://h/{a,b': a { is not closed (use -g to turn globbing off)")
        ) {
            try URLGlob.expand("http://h/{a,b")
        }
        #expect(
            throws: UsageError(
                message: "error: 'http://h/[1-2': a [ is not closed (use -g to turn globbing off)")
        ) {
            try URLGlob.expand("http://h/[1-2")
        }
        #expect(throws: UsageError.self) { try URLGlob.expand("http://h/[1-1000][1-1000]") }
    }
}
