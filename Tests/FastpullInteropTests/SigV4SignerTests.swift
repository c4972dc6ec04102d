import FastpullFixtures
import Foundation
import Testing

@testable import FastpullHTTP

/// The fixtures' SigV4 signer against the examples in AWS's S3 documentation (SigV4 "Authenticating
/// Requests"), so presigned URLs are the ones S3 users get, not merely ones moto accepts.
@Suite("SigV4 signer")
struct SigV4SignerTests {
    static let signer = SigV4Signer(
        accessKey: "AKIAIOSFODNN7EXAMPLE", secretKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        region: "us-east-1")
    static let date = Date(timeIntervalSince1970: 1_369_353_600)  // 2013-05-24T00:00:00Z

    @Test("query presigning matches AWS's GET example")
    func presignedURL() {
        let url = Self.signer.presignedURL(
            scheme: "https", host: "examplebucket.s3.amazonaws.com", path: "/test.txt", expires: 86400,
            date: Self.date)
        #expect(
            url.hasSuffix("X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"))
        #expect(
            url.contains(
                "X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z"
            ))
    }

    @Test("header signing matches AWS's ranged GET example")
    func signedHeaders() {
        let headers = Self.signer.signedHeaders(
            method: "GET", host: "examplebucket.s3.amazonaws.com", path: "/test.txt",
            headers: ["Range": "bytes=0-9"], payload: Data(), date: Self.date)
        let authorization = headers.first { $0.0 == "Authorization" }?.1 ?? ""
        #expect(
            authorization
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }
}
