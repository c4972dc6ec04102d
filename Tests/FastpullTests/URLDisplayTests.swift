import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP

@Suite("URLs in messages")
struct URLDisplayTests {
    @Test(arguments: [
        (
            "https://b.s3.example/k?X-Amz-Credential=AKID&X-Amz-Signature=cafe&X-Amz-Security-Token=tok",
            "https://b.s3.example/k?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&X-Amz-Security-Token=REDACTED"
        ),
        (
            // S3's older signatures (SigV2) and CloudFront's signed URLs.
            "https://b.s3.example/k?AWSAccessKeyId=AK&Expires=1700000000&Signature=a%2Fb%3D",
            "https://b.s3.example/k?AWSAccessKeyId=REDACTED&Expires=1700000000&Signature=REDACTED"
        ),
        (
            "https://d1.cloudfront.example/a.iso?Expires=1700000000&Signature=abc~&Key-Pair-Id=K2",
            "https://d1.cloudfront.example/a.iso?Expires=1700000000&Signature=REDACTED&Key-Pair-Id=K2"
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
