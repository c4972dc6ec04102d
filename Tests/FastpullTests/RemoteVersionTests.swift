import Foundation
import Testing

@testable import FastpullEngine
@testable import FastpullHTTP

/// Which answers belong to the version of the file pinned at the probe
/// (``RemoteFile/changeReason(in:)``): every byte written must be of that one version.
@Suite("The version pinned at the probe")
struct RemoteVersionTests {
    static func remote(etag: String? = nil, weak: String? = nil, lastModified: String? = nil) -> RemoteFile {
        var remote = RemoteFile(
            url: URL(string: "http://example.org/a.bin")!, finalURL: URL(string: "http://example.org/a.bin")!,
            size: 10, acceptsRanges: true, etag: etag, lastModified: lastModified)
        remote.weakETag = weak
        return remote
    }

    static func answer(_ fields: [(String, String)]) -> ResponseHead {
        ResponseHead(
            versionMajor: 1, versionMinor: 1, status: 206, reason: "",
            headers: HTTPHeaders(fields.map { (name: $0.0, value: $0.1) }))
    }

    /// A strong ETag pinned at the probe must be on every answer (a 206 carries what a 200 would): a
    /// new version that leaves the tag out, with no other validator, was taken as the same one, and
    /// its bytes were written beside the old version's.
    @Test func anAnswerWithoutThePinnedETagIsAnotherVersion() {
        let pinned = Self.remote(etag: "\"v1\"")
        #expect(pinned.changeReason(in: Self.answer([("ETag", "\"v1\"")])) == nil)
        let reason = pinned.changeReason(in: Self.answer([]))
        #expect(reason?.contains("no longer sends its ETag \"v1\"") == true)
        #expect(pinned.changeReason(in: Self.answer([("ETag", "\"v2\"")]))?.contains("changed") == true)
    }

    /// Without an ETag on the answer, a different Last-Modified says another version, whatever the
    /// probe pinned.
    @Test func withoutAnETagLastModifiedDecides() {
        let pinned = Self.remote(lastModified: "Mon, 01 Jan 2024 00:00:00 GMT")
        #expect(
            pinned.changeReason(in: Self.answer([("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT")])) == nil)
        #expect(pinned.changeReason(in: Self.answer([])) == nil)
        #expect(
            pinned.changeReason(in: Self.answer([("Last-Modified", "Tue, 02 Jan 2024 00:00:00 GMT")]))?
                .contains("Last-Modified") == true)
    }

    /// Weak tags match weakly (by their opaque part); two different ones are two versions.
    @Test func aDifferentWeakETagIsAnotherVersion() {
        let pinned = Self.remote(weak: "W/\"5-abc\"")
        #expect(pinned.changeReason(in: Self.answer([("ETag", "W/\"5-abc\"")])) == nil)
        #expect(pinned.changeReason(in: Self.answer([("ETag", "\"5-abc\"")])) == nil)
        #expect(pinned.changeReason(in: Self.answer([("ETag", "W/\"5-abd\"")]))?.contains("ETag") == true)
        // A weak tag that is left out proves nothing either way.
        #expect(pinned.changeReason(in: Self.answer([])) == nil)
    }
}
