import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine

@Suite("Journal")
struct JournalTests {
    func journal(
        segments: [(Int64, Int64, Int64, Int64)] = [(0, 10, 4, 6), (10, 20, 10, 10), (20, 25, 0, 2)],
        bootID: String? = "boot-a"
    ) -> Journal {
        Journal(
            url: "https://example.org/a.iso", finalURL: "https://cdn.example.org/a.iso", size: 25,
            etag: "\"abc\"", lastModified: "Wed, 01 Jan 2020 00:00:00 GMT", checksums: ["sha256=00"],
            bootID: bootID,
            segments: segments.map { Journal.Entry(start: $0.0, end: $0.1, durable: $0.2, written: $0.3) })
    }

    func remote(
        size: Int64? = 25, etag: String? = "\"abc\"", lastModified: String? = "Wed, 01 Jan 2020 00:00:00 GMT"
    )
        -> RemoteFile
    {
        RemoteFile(
            url: URL(string: "https://example.org/a.iso")!,
            finalURL: URL(string: "https://cdn.example.org/a.iso")!,
            size: size, acceptsRanges: true, etag: etag, lastModified: lastModified)
    }

    @Test func roundTripsThroughJSON() throws {
        let original = journal()
        let data = original.encoded()
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("\"format\" : \"fastpull-journal\""))
        #expect(text.contains("\"version\" : 2"))
        #expect(text.contains("\"checksum\" : \"\(original.contentChecksum())\""))
        #expect(text.contains("fastpull/"))
        #expect(try Journal.decode(data) == original)
    }

    @Test func rejectsGarbageEmptyAndTruncated() throws {
        let data = journal().encoded()
        #expect(throws: Journal.Problem.unreadable("empty file")) { try Journal.decode(Data()) }
        #expect(throws: Journal.Problem.unreadable("not a valid journal")) {
            try Journal.decode(data.prefix(data.count / 2))
        }
        #expect(throws: Journal.Problem.unreadable("not a valid journal")) {
            try Journal.decode(Data("{}".utf8))
        }
    }

    /// A journal damaged or edited by hand (here: to claim every byte is written) is refused, as is
    /// one without its seal (version 1 had none).
    @Test func rejectsAnEditedOrUnsealedJournal() throws {
        let text = String(decoding: journal().encoded(), as: UTF8.self)
        let edited = text.replacingOccurrences(of: "\"written\" : 2", with: "\"written\" : 5")
        #expect(edited != text)
        #expect(
            throws: Journal.Problem.inconsistent(
                "its checksum does not match its contents: it was damaged or edited")
        ) {
            try Journal.decode(Data(edited.utf8))
        }
        let unsealed = text.split(separator: "\n").filter { !$0.contains("\"checksum\" :") }.joined(
            separator: "\n")
        #expect(throws: Journal.Problem.self) { try Journal.decode(Data(unsealed.utf8)) }
        var old = journal()
        old.version = 1
        #expect(throws: Journal.Problem.unsupportedVersion(1)) { try Journal.decode(old.encoded()) }
    }

    @Test func rejectsOtherFormatsAndVersions() throws {
        var other = journal()
        other.format = "something-else"
        #expect(throws: Journal.Problem.unreadable("not a fastpull journal")) {
            try Journal.decode(other.encoded())
        }
        var future = journal()
        future.version = 99
        #expect(throws: Journal.Problem.unsupportedVersion(99)) { try Journal.decode(future.encoded()) }
    }

    @Test(
        arguments: [
            [(0, 10, 0, 0), (11, 25, 0, 0)],  // gap
            [(0, 10, 0, 0), (10, 20, 0, 0)],  // does not reach the size
            [(0, 10, 5, 4), (10, 25, 0, 0)],  // durable beyond written
            [(0, 10, 0, 11), (10, 25, 0, 0)],  // written beyond the segment
            [(0, 10, -1, 0), (10, 25, 0, 0)],  // negative
            [(0, 0, 0, 0), (0, 25, 0, 0)],  // empty segment
        ] as [[(Int64, Int64, Int64, Int64)]])
    func rejectsInconsistentProgress(segments: [(Int64, Int64, Int64, Int64)]) throws {
        let bad = journal(segments: segments)
        #expect(throws: Journal.Problem.self) { try Journal.decode(bad.encoded()) }
    }

    @Test func sameBootKeepsWrittenBytesOtherBootOnlyDurable() {
        let saved = journal()
        #expect(saved.segmentsToResume(currentBootID: "boot-a").map(\.written) == [6, 10, 2])
        #expect(saved.segmentsToResume(currentBootID: "boot-b").map(\.written) == [4, 10, 0])
        #expect(saved.segmentsToResume(currentBootID: nil).map(\.written) == [4, 10, 0])
        #expect(saved.keptBytes(currentBootID: "boot-a") == 18)
        #expect(saved.keptBytes(currentBootID: "boot-b") == 14)
    }

    @Test func comparesTheRemoteIdentity() {
        let saved = journal()
        #expect(saved.matches(remote()) == .same)
        guard case .changed(let reason) = saved.matches(remote(etag: "\"xyz\"")) else {
            Issue.record("a new ETag must count as a change")
            return
        }
        #expect(reason.contains("ETag"))
        guard case .changed = saved.matches(remote(size: 26)) else {
            Issue.record("a new size must count as a change")
            return
        }
        guard case .changed = saved.matches(remote(etag: nil)) else {
            Issue.record("a vanished ETag must count as a change")
            return
        }
        var dated = journal()
        dated.etag = nil
        guard case .changed = dated.matches(remote(etag: nil, lastModified: "Thu, 02 Jan 2020 00:00:00 GMT"))
        else {
            Issue.record("a new Last-Modified must count as a change when there is no ETag")
            return
        }
        var bare = journal()
        bare.etag = nil
        bare.lastModified = nil
        #expect(bare.matches(remote(etag: nil, lastModified: nil)) == .unverifiable)
    }

    /// A weak ETag proves no byte the same (a resume against it only is unverifiable), but a different
    /// one is another version: before, weak tags were dropped, and `-c` went on into a changed file.
    @Test func aDifferentWeakETagIsAChange() throws {
        var weak = journal()
        weak.etag = nil
        weak.lastModified = nil
        weak.weakETag = "W/\"1024-1700000000123\""
        var now = remote(etag: nil, lastModified: nil)
        now.weakETag = "W/\"1024-1700000000999\""
        guard case .changed(let reason) = weak.matches(now) else {
            Issue.record("a different weak ETag must count as a change")
            return
        }
        #expect(reason.contains("ETag"))
        now.weakETag = weak.weakETag
        #expect(weak.matches(now) == .unverifiable)
        // Kept through the journal's own encoding, byte for byte the encoder's.
        #expect(weak.handWrittenEncoding == Journal.encoderEncoding(weak))
        #expect(try Journal.decode(weak.encoded()) == weak)
    }

    @Test func liveJournalImprovesTheDurableOneOnTheSameBootOnly() {
        let durable = journal(segments: [(0, 10, 4, 4), (10, 20, 0, 3), (20, 25, 0, 0)])
        let live = journal(segments: [(0, 10, 4, 9), (10, 20, 0, 2), (20, 25, 0, 5)])
        let merged = Pipeline.merge(durable: durable, live: live, bootID: "boot-a")
        #expect(merged?.segments.map(\.written) == [9, 3, 5])
        #expect(merged?.segments.map(\.durable) == [4, 0, 0])
        #expect(Pipeline.merge(durable: durable, live: live, bootID: "boot-b") == durable)
        #expect(Pipeline.merge(durable: nil, live: live, bootID: "boot-a") == live)
        #expect(Pipeline.merge(durable: nil, live: live, bootID: "boot-b") == nil)
        var foreign = live
        foreign.etag = "\"other\""
        #expect(Pipeline.merge(durable: durable, live: foreign, bootID: "boot-a") == durable)
    }

    /// Segments split and merge between durable saves; the live journal still counts: the bytes
    /// either journal records are the union of both, with every boundary kept.
    @Test func liveJournalCountsAfterTheSegmentsChanged() throws {
        // The durable save saw the plan's three segments; since then the first two were merged into one
        // window and a steal split the last one at 22.
        let durable = journal(segments: [(0, 10, 4, 4), (10, 20, 0, 0), (20, 25, 0, 0)])
        let live = journal(segments: [(0, 20, 0, 14), (20, 22, 0, 1), (22, 25, 0, 3)])
        let merged = try #require(Pipeline.merge(durable: durable, live: live, bootID: "boot-a"))
        #expect(merged.segments.map(\.start) == [0, 10, 20, 22])
        #expect(merged.segments.map(\.end) == [10, 20, 22, 25])
        #expect(merged.segments.map(\.written) == [10, 4, 1, 3])
        #expect(merged.segments.map(\.durable) == [4, 0, 0, 0])
        #expect(merged.keptBytes(currentBootID: "boot-a") == 18)
        try merged.validate()
        // Killed before the first durable save saw a byte: the live journal alone still counts.
        let empty = journal(segments: [(0, 10, 0, 0), (10, 20, 0, 0), (20, 25, 0, 0)])
        let early = try #require(Pipeline.merge(durable: empty, live: live, bootID: "boot-a"))
        #expect(early.keptBytes(currentBootID: "boot-a") == 18)
        // After a reboot only what was synced counts.
        #expect(Pipeline.merge(durable: durable, live: live, bootID: "boot-b") == durable)
    }

    @Test func storeWritesAtomicallyAndReadsBack() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "journal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = JournalStore(partPath: folder.appendingPathComponent("a.iso.part").path)
        #expect(!store.exists)
        try store.write(journal(), durably: true)
        try store.write(journal(bootID: "boot-live"), durably: false)
        let (durable, live) = store.read()
        #expect(try Journal.decode(try #require(durable)) == journal())
        #expect(try Journal.decode(try #require(live)).bootID == "boot-live")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(names == ["a.iso.part.fastpull", "a.iso.part.fastpull-live"])
        try store.remove()
        #expect(!store.exists)
    }

    /// The hand-written encoding is JSONEncoder's, byte for byte (journals written before it still
    /// verify, and tools that read them see the same file), for every field present or absent and for
    /// strings with quotes, backslashes, slashes and non-ASCII text; a control character goes to the
    /// encoder itself.
    @Test(
        arguments: [
            (
                "\"v1\"", "http://h.example/a/b.iso?x=1&y=\\z", "Tue, 01 Dec 2026 18:12:31 GMT", "boot",
                ["sha256:ab"]
            ),
            ("W/\"ünï\" 日本", "https://h.example/ä ö.iso", "", "", []),
            ("tab\there", "http://h.example/c.iso", "Mon", "b", ["md5:1", "sha1:2"]),
        ] as [(String, String, String, String, [String])])
    func theHandWrittenEncodingIsTheEncoders(
        etag: String, url: String, modified: String, boot: String, checksums: [String]
    ) throws {
        // Numbers of one digit to nineteen.
        let step: Int64 = 3_074_457_345_618_258_602
        let segments = (0..<3).map {
            Journal.Entry(
                start: Int64($0) * step, end: Int64($0 + 1) * step, durable: Int64($0),
                written: 5 + Int64($0) * 99_991)
        }
        let journal = Journal(
            url: url, finalURL: url + "/final", size: 3 * step, etag: etag.isEmpty ? nil : etag,
            lastModified: modified.isEmpty ? nil : modified, checksums: checksums,
            bootID: boot.isEmpty ? nil : boot, segments: segments)
        #expect(journal.handWrittenEncoding == Journal.encoderEncoding(journal))
        var sealed = journal
        sealed.checksum = journal.contentChecksum()
        #expect(sealed.handWrittenEncoding == Journal.encoderEncoding(sealed))
        #expect(journal.encoded() == Journal.encoderEncoding(sealed))
        #expect(try Journal.decode(journal.encoded()) == journal)
    }

    /// A journal that remembers its link: the hand-written encoding is still the encoder's, and it
    /// decodes to the same record.
    @Test func theLinkIsEncodedAsTheEncoderWouldAndReadBack() throws {
        var journal = Journal(
            url: "http://h.example/a.iso", finalURL: "http://h.example/a.iso", size: 100, etag: "\"e\"",
            lastModified: "Mon", checksums: [], bootID: "boot",
            segments: [Journal.Entry(start: 0, end: 100, durable: 10, written: 20)])
        for shared in [true, false] {
            journal.link = LinkMemory(
                connections: 12, bytesPerSecond: 1_234_567_890_123, shared: shared, learnedAt: 1_796_000_000)
            #expect(journal.handWrittenEncoding == Journal.encoderEncoding(journal))
            #expect(try Journal.decode(journal.encoded()) == journal)
        }
    }

    /// What a journal remembers of its link is used only on the boot it was learned on and for ten
    /// minutes after; a record no run could have written is an inconsistent journal.
    @Test func theLinkIsUsedOnlyWhileItHolds() throws {
        let learnedAt: Int64 = 1_796_000_000
        let link = LinkMemory(connections: 2, bytesPerSecond: 12_500_000, shared: true, learnedAt: learnedAt)
        var journal = Journal(
            url: "http://h.example/a.iso", finalURL: "http://h.example/a.iso", size: 100, etag: nil,
            lastModified: nil, checksums: [], bootID: "boot",
            segments: [Journal.Entry(start: 0, end: 100, durable: 10, written: 20)], link: link)
        #expect(journal.linkToResume(currentBootID: "boot", now: learnedAt + 5) == link)
        #expect(journal.linkToResume(currentBootID: "boot", now: learnedAt + LinkMemory.lifetime) == link)
        #expect(journal.linkToResume(currentBootID: "boot", now: learnedAt + LinkMemory.lifetime + 1) == nil)
        #expect(journal.linkToResume(currentBootID: "boot", now: learnedAt - 1) == nil)
        #expect(journal.linkToResume(currentBootID: "another boot", now: learnedAt + 5) == nil)
        #expect(journal.linkToResume(currentBootID: nil, now: learnedAt + 5) == nil)
        journal.link?.connections = 0
        #expect(throws: Journal.Problem.inconsistent("its link record is impossible")) {
            try Journal.decode(journal.encoded())
        }
    }
}
