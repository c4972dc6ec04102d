import Foundation
import Testing

@testable import FastpullCommandLine

/// Other tools' spellings read as fastpull's, and those that mean something else refused with
/// fastpull's spelling in the error.
struct OptionAliasesTests {
    @Test func curlWgetAndAria2SpellingsBecomeFastpulls() throws {
        let cases: [([String], [String])] = [
            (["-L", "-O", "-J", "u"], ["u"]),
            (["-fsSL", "u"], ["--quiet", "u"]),
            (["-sS", "u"], ["--quiet", "u"]),
            (["-LO", "u"], ["u"]),
            (["-s", "u"], ["--quiet", "u"]),
            (["-s", "16", "u"], ["--max-connections", "16", "u"]),
            (["--split", "8", "u"], ["--max-connections", "8", "u"]),
            (["-C", "-", "u"], ["u"]),
            (["-x", "http://proxy:3128", "u"], ["--proxy", "http://proxy:3128", "u"]),
            (["-x", "4", "u"], ["--max-connections", "4", "u"]),
            (["--retry", "5", "u"], ["--retries", "5", "u"]),
            (["-P", "out", "u"], ["--dir", "out", "u"]),
            (["--output-dir", "out", "u"], ["--dir", "out", "u"]),
            (["-N", "u"], ["u"]),
            (["--max-overall-download-limit", "1M", "u"], ["--total-rate", "1M", "u"]),
            (["-k", "u"], ["-k", "u"]),
            (["-nc", "u"], ["--no-clobber", "u"]),
            (["--auto-file-renaming=true", "u"], ["--auto-rename", "u"]),
            (["u", "--", "-L"], ["u", "--", "-L"]),
        ]
        for (given, expected) in cases {
            #expect(try OptionAliases.rewrite(given) == expected, "\(given)")
        }
        // What the rewritten line means is fastpull's parse of it.
        let parsed = try ArgumentParser.parse(
            try OptionAliases.rewrite(["-fsSL", "-P", "d", "--retry", "3", "u"]))
        #expect(parsed.has("quiet") && parsed.last("dir") == "d" && parsed.last("retries") == "3")
    }

    @Test func spellingsThatMeanSomethingElseAreRefusedWithFastpulls() {
        for (given, says) in [
            (["-k", "1M", "u"], "use --min-segment 1M"),
            (["-C", "100", "u"], "takes '-' here"),
        ] {
            do {
                _ = try OptionAliases.rewrite(given)
                Issue.record("\(given) was accepted")
            } catch {
                #expect(error.message.contains(says), "\(given): \(error.message)")
            }
        }
    }

    /// The README's table of spellings lists every one read here.
    @Test func theReadmeListsEverySpelling() throws {
        let readme = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("README.md"), encoding: .utf8)
        for alias in OptionAliases.table {
            #expect(
                readme.contains("| `\(alias.spelling)` | \(alias.tool) | \(alias.fastpull) |"),
                "\(alias.spelling)")
        }
    }
}
