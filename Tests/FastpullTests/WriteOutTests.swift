import FastpullCommandLine
import Testing

/// `-w`: curl's variables and escapes, and an unknown variable refused by name.
@Suite("--write-out formats")
struct WriteOutTests {
    @Test func anUnknownVariableOrAnOpenOneIsAUsageError() {
        #expect(throws: UsageError.self) { try WriteOut("%{nope}") }
        #expect(throws: UsageError(option: "write-out", "a %{ is not closed", got: "%{http_code")) {
            try WriteOut("%{http_code")
        }
    }
}
