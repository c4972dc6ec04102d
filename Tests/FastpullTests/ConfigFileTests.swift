import FastpullCommandLine
import Testing

/// The configuration file's lines, as arguments, and what it may not hold.
@Suite("Configuration file")
struct ConfigFileTests {
    @Test func eachFormOfALineIsAnOption() throws {
        let text = """
            # daily defaults
            dir = /data/downloads
            --retries 8
            max-connections=32
            header = "X-Token: a b"
            quiet = on
            verbose = off
            retry = 3

            """
        #expect(
            try ConfigFile.arguments(from: text, source: "c") == [
                "--dir", "/data/downloads", "--retries", "8", "--max-connections", "32", "--header",
                "X-Token: a b",
                "--quiet", "--retries", "3",
            ])
    }

    @Test(arguments: [
        ("bogus = 1", "error: c:1: unknown option '--bogus'"),
        ("config = other", "error: c:1: --config cannot be in a configuration file"),
        ("quiet = maybe", "error: c:1: --quiet is on or off, got 'maybe'"),
        ("dir = \"open", "error: c:1: a quote is not closed"),
        ("-o x", "error: c:1: expected an option by its long name, got '-o x'"),
    ])
    func aBadLineNamesItsFileAndLine(text: String, message: String) {
        #expect {
            try ConfigFile.arguments(from: text, source: "c")
        } throws: { error in
            (error as? UsageError)?.message.hasPrefix(message) == true
        }
    }

    @Test func theFileComesFirstAndCanBeChosenOrTurnedOff() throws {
        let files = ["/home/u/.config/fastpull/config": "dir = a\n", "/x.conf": "dir = b\n"]
        let environment = ["HOME": "/home/u"]
        func merged(_ arguments: [String]) throws -> [String] {
            try ConfigFile.merged(arguments, environment: environment, read: { files[$0] })
        }
        #expect(try merged(["u"]) == ["--dir", "a", "u"])
        #expect(try merged(["-K", "/x.conf", "u"]) == ["--dir", "b", "-K", "/x.conf", "u"])
        #expect(try merged(["--no-config", "u"]) == ["--no-config", "u"])
        #expect(try merged(["-qK", "/x.conf", "u"]) == ["--dir", "b", "-qK", "/x.conf", "u"])
        #expect(try merged(["-K/x.conf", "u"]) == ["--dir", "b", "-K/x.conf", "u"])
        // -o takes the rest of its cluster: no configuration file named there.
        #expect(try merged(["-oK", "u"]) == ["--dir", "a", "-oK", "u"])
        // A value that ends in K, or looks like -K, belongs to the option before it: no configuration
        // file is named there (`--min-segment 64K` read `K` and took the next argument as a file).
        #expect(
            try merged(["--min-segment", "64K", "-o", "x", "u"]) == [
                "--dir", "a", "--min-segment", "64K", "-o", "x", "u",
            ])
        #expect(try merged(["-o", "-Kfoo", "u"]) == ["--dir", "a", "-o", "-Kfoo", "u"])
        #expect(try merged(["--limit-rate", "8K/s", "u"]) == ["--dir", "a", "--limit-rate", "8K/s", "u"])
        #expect(try merged(["u", "64K"]) == ["--dir", "a", "u", "64K"])
        #expect(try ConfigFile.merged(["u"], environment: [:], read: { files[$0] }) == ["u"])
        #expect(throws: UsageError(message: "error: --config: cannot read '/none'")) {
            try merged(["--config", "/none", "u"])
        }
    }
}
