import FastpullCommandLine
import Testing

/// Where the passwords are in the command's arguments, found with the parser's grammar.
@Suite("ArgumentSecrets")
struct ArgumentSecretsTests {
    /// The text of each span found in `arguments`.
    func hidden(_ arguments: [String]) -> [String] {
        ArgumentSecrets.spans(in: arguments).map { span in
            String(decoding: Array(arguments[span.argument].utf8)[span.bytes], as: UTF8.self)
        }
    }

    @Test(arguments: [
        (["-u", "alice:S3cretPW", "http://h/x"], ["S3cretPW"]),
        (["-ualice:S3cretPW", "http://h/x"], ["S3cretPW"]),
        (["--user=alice:S3:cret", "http://h/x"], ["S3:cret"]),
        (["--user", "alice:pw", "-u", "bob:other"], ["pw", "other"]),
        (["-qku", "alice:pw", "http://h/x"], ["pw"]),
        (["-kualice:pw"], ["pw"]),
        (["--user", "élise:pässwörd"], ["pässwörd"]),
        (["--user", "alice:", "--user", "alice"], []),
        (["http://carol:C4rol@127.0.0.1:8080/x?y=a:b@c"], ["C4rol"]),
        (["https://carol:p@ss@h/x"], ["p@ss"]),
        (["http://carol@h/x", "http://h/x?u=a:b@c", "http://h/a:b@c"], []),
        (["--proxy", "http://dave:Pr0xy@p:3128", "--proxy=dave:Pr0xy2@p:3128"], ["Pr0xy", "Pr0xy2"]),
        (["--mirror=https://m:M1rror@m.test/x", "-M", "https://m:Meta@m.test/x.meta4"], ["M1rror", "Meta"]),
        (["--", "-u", "http://u:pw@h/x"], ["pw"]),
        (["-o", "out", "-u"], []),
        (["--bogus", "x", "-u", "a:b"], ["b"]),
    ])
    func findsEachPassword(arguments: [String], passwords: [String]) {
        #expect(hidden(arguments) == passwords)
    }

    /// A host without a scheme is a password only where the option takes it so (`--proxy`).
    @Test func aSchemelessURLIsAProxysOnly() {
        #expect(hidden(["dave:pw@p:3128"]).isEmpty)
        #expect(hidden(["--proxy", "dave:pw@p:3128"]) == ["pw"])
        #expect(
            ArgumentSecrets.spans(in: ["-o", "x", "-u", "a:bc"])
                == [ArgumentSecrets.Span(argument: 3, bytes: 2..<4)])
    }
}
