import Testing

@testable import Fastpull
@testable import FastpullCommandLine
@testable import FastpullEngine

/// Each remedy in two languages: the library names its `Configuration` fields, the command line its
/// options; neither leaks into the other.
@Suite("Error wording: library and command line")
struct ErrorWordingTests {
    @Test(arguments: FastpullError.Remedy.allCases)
    func theLibraryNeverNamesAnOption(_ remedy: FastpullError.Remedy) {
        let error = FastpullError(.localIO, "something happened", remedy: remedy)
        #expect(!"\(error)".contains("--"), "\(error)")
        #expect("\(error)" == "something happened; \(remedy)")
        #expect(error.message == "something happened")
    }

    @Test func theCommandLineNamesItsOptions() {
        let words: [FastpullError.Remedy: String] = [
            .resume: "run the same command to resume",
            .freeSpace: "free some space and run the same command again",
            .replaceExisting: "use --force to replace it",
            .startOver: "run again without --no-restart or -c to start over",
            .trustAnotherAuthority:
                "pass --cacert FILE to trust another authority, or --insecure to skip verification",
            .saveDocumentAsItIs: "pass --no-follow-metalink to save the document as it is",
        ]
        #expect(Set(words.keys) == Set(FastpullError.Remedy.allCases))
        for (remedy, advice) in words {
            let error = FastpullError(.localIO, "x", remedy: remedy)
            #expect(error.commandLineMessage == "x; \(advice)")
        }
        #expect(FastpullError(.network, "no remedy").commandLineMessage == "no remedy")
    }

    @Test func aChecksumTheCallerGaveIsNamedByEachInItsWay() {
        let source = Report.ChecksumCheck.Source.user
        #expect(source.description == "the given checksum")
        #expect(source.commandLineName == "--checksum")
        #expect(Report.ChecksumCheck.Source.header("Repr-Digest").commandLineName == "Repr-Digest header")
    }
}
