// libFuzzer target: Journal.decode (the resume journal `<output>.part.fastpull`).
//
// Input: the journal file's bytes. A journal that decodes must be consistent (segments tile the file,
// progress within each segment), must encode and decode back to itself, and what it lets a resume keep
// must fit in the file.

import Foundation

/// libFuzzer's entry point: runs one input; a violated invariant stops the process.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJournal(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = Data(fuzzInput(data, size))
    guard let journal = try? Journal.decode(bytes) else { return 0 }
    require(journal.format == Journal.formatName && journal.version == Journal.currentVersion, "header")
    require(journal.size > 0, "size \(journal.size)")
    var expected: Int64 = 0
    for entry in journal.segments {
        require(entry.start == expected && entry.end > entry.start, "segment \(entry) out of order")
        require(0 <= entry.durable && entry.durable <= entry.written, "segment \(entry) progress")
        require(entry.written <= entry.end - entry.start, "segment \(entry) overfull")
        expected = entry.end
    }
    require(expected == journal.size, "segments end at \(expected), not \(journal.size)")

    let again = try? Journal.decode(journal.encoded())
    require(again == journal, "the journal does not survive encoding: \(String(describing: again))")

    for bootID in [journal.bootID, "another-boot", nil] {
        let segments = journal.segmentsToResume(currentBootID: bootID)
        require(segments.count == journal.segments.count, "segments to resume")
        let kept = journal.keptBytes(currentBootID: bootID)
        require(kept >= 0 && kept <= journal.size, "keeps \(kept) of \(journal.size) bytes")
        for segment in segments {
            require(segment.written >= 0 && segment.written <= segment.length, "resume \(segment)")
        }
    }

    let url = URL(string: "http://127.0.0.1/x")!
    let same = RemoteFile(
        url: url, finalURL: url, size: journal.size, acceptsRanges: true, etag: journal.etag,
        lastModified: journal.lastModified)
    let comparison = journal.matches(same)
    require(comparison == .same || comparison == .unverifiable, "the journal does not match its own file")
    var bigger = same
    bigger.size = journal.size == Int64.max ? journal.size - 1 : journal.size + 1
    if case .changed = journal.matches(bigger) {} else { require(false, "a size change went unnoticed") }
    return 0
}
