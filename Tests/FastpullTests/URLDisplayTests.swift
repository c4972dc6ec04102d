import Foundation
import Testing

@testable import Fastpull

@Suite("URLs in messages")
struct URLDisplayTests {
    @Test(arguments: [
        (
            "https://b.s3.example/k?X-Amz-Credential=AKID&X-Amz-Signature=cafe&X-Amz-Security-Token=tok",
            "https://b.s3.example/k?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&X-Amz-Security-Token=REDACTED"
        ),
        (
            "https://acct.blob.example/c/k?sv=2020&sig=abc%2Bdef",
            "https://acct.blob.example/c/k?sv=2020&sig=REDACTED"
        ),
        (
            "https://api.example/file?access_token=xyz&name=a.iso",
            "https://api.example/file?access_token=REDACTED&name=a.iso"
        ),
        ("https://user:secret@host.example/a.iso", "https://user:REDACTED@host.example/a.iso"),
        ("https://host.example/a.iso?version=2", "https://host.example/a.iso?version=2"),
    ])
    func secretsAreRedacted(url: String, shown: String) throws {
        #expect(try #require(URL(string: url)).redactedForDisplay == shown)
    }
}
