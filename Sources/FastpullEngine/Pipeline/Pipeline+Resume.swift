import FastpullHTTP
import FoundationEssentials

extension Pipeline {
    /// Where a segmented download starts: the `.part` file, the segments with their progress, and
    /// the journal template that records them.
    struct Start {
        var file: OutputFile
        var segments: [Segment]
        var journal: Journal
        var keptBytes: Int64
        /// What the run before learned of the link, when it still holds (``Journal/linkToResume(currentBootID:now:)``).
        var link: LinkMemory? = nil
    }

    /// Continues from a journal that matches the remote file, or starts a fresh `.part` file. Every
    /// reason not to resume is told to the user through an event.
    /// `adopting`: the length of another program's partial file at the destination, proven the
    /// beginning of the file (``proveAdoptable(length:remote:size:pool:executor:)``): its bytes are
    /// copied into the new `.part` file and count as written.
    func resumeOrCreate(remote: RemoteFile, size: Int64, adopting: Int64? = nil) throws -> Start {
        let bootID = JournalStore.currentBootID()
        var template = Journal(
            url: journalURL, finalURL: remote.finalURL.absoluteString, size: size,
            etag: remote.etag, lastModified: remote.lastModified, weakETag: remote.weakETag,
            checksums: configuration.integrity.checksums.map(\.description), bootID: bootID, segments: [])

        let file = try claimedPart()
        if let journal = try usableJournal(remote: remote, bootID: bootID) {
            let segments = journal.segmentsToResume(currentBootID: bootID)
            let kept = segments.reduce(0) { $0 + $1.written }
            template.segments = journal.segments
            counters.bytesWritten.store(kept, ordering: .relaxed)
            download.emit(.resumed(keptBytes: kept, totalBytes: size))
            return Start(
                file: file, segments: segments, journal: template, keptBytes: kept,
                link: journal.linkToResume(currentBootID: bootID))
        }

        do {
            try file.truncate(to: 0)
            try file.checkRoom(for: size, empty: true)
        } catch {
            throw Failure(error, url: remote.finalURL).error
        }
        let plan = Planner.plan(
            size: size, connections: configuration.connectionLimit,
            minimumSegmentSize: configuration.connections.minimumSegmentSize)
        do {
            try file.preallocate(size: size)
            var segments = plan.segments
            if let adopting {
                try file.copyPrefix(from: outputPath, count: adopting)
                for index in segments.indices {
                    segments[index].written = max(
                        0, min(segments[index].length, adopting - segments[index].start))
                }
                counters.bytesWritten.store(adopting, ordering: .relaxed)
                download.emit(.resumed(keptBytes: adopting, totalBytes: size))
            }
            template.segments = segments.map {
                Journal.Entry(start: $0.start, end: $0.end, durable: 0, written: $0.written)
            }
            return Start(file: file, segments: segments, journal: template, keptBytes: adopting ?? 0)
        } catch {
            throw Failure(error, url: remote.finalURL).error
        }
    }

    /// What the journal records as the download's URL: the URL, with the part of the file fetched
    /// (`--range`), so that a journal of another part is not resumed.
    var journalURL: String {
        Journal.downloadURL(download.url, byteRange: configuration.request.byteRange)
    }

    /// The segments a run would resume from the journal at the destination, read and changed nothing:
    /// for a plan. Nil when there is none, or it would not be resumed (another URL, another version
    /// of the file, a `.part` file of another size, `--restart`).
    func resumablePreview(remote: RemoteFile, size: Int64) -> [Segment]? {
        guard configuration.resume.fromJournal, download.destination != PlanPlaceholder.destination,
            store.exists
        else { return nil }
        let bootID = JournalStore.currentBootID()
        let (durableData, liveData) = store.read()
        let durable = durableData.flatMap { try? Journal.decode($0) }
        let live = liveData.flatMap { try? Journal.decode($0) }
        guard let journal = Self.merge(durable: durable, live: live, bootID: bootID),
            journal.url == journalURL, journal.size == size,
            FileSystem.size(partPath) == journal.size
        else { return nil }
        if case .changed = journal.matches(remote) { return nil }
        return journal.segmentsToResume(currentBootID: bootID)
    }

    /// The journal to resume from, or nil after discarding whatever stood in the way (and saying why).
    private func usableJournal(remote: RemoteFile, bootID: String?) throws -> Journal? {
        let store = store
        guard store.exists else {
            if let size = try? claimedPart().size(), size > 0 {
                download.emit(
                    .warning("\(partPath) has no journal, so its bytes cannot be trusted; starting over"))
            }
            return nil
        }
        let (durableData, liveData) = store.read()
        var durable: Journal?
        var problem: Journal.Problem?
        if let durableData {
            do { durable = try Journal.decode(durableData) } catch { problem = error }
        }
        let live = liveData.flatMap { try? Journal.decode($0) }
        guard let journal = Self.merge(durable: durable, live: live, bootID: bootID) else {
            let reason = problem?.description ?? "it is missing"
            download.emit(.warning("the journal \(store.durablePath) is unusable: \(reason); starting over"))
            try discardProgress()
            return nil
        }
        guard journal.url == journalURL else {
            download.emit(
                .warning(
                    "the journal \(store.durablePath) belongs to \(journal.url), not this URL; starting over")
            )
            try discardProgress()
            return nil
        }
        switch journal.matches(remote) {
        case .changed(let reason):
            guard configuration.resume.restartsWhenRemoteChanges else {
                throw FastpullError(
                    .remoteChanged,
                    "\(download.url.redactedForDisplay) changed since the interrupted download (\(reason))",
                    remedy: .startOver)
            }
            download.emit(
                .restarting(reason: "the remote file changed since the interrupted download: \(reason)"))
            try discardProgress()
            return nil
        case .unverifiable:
            let hint =
                configuration.integrity.checksums.isEmpty
                ? "; give a checksum to make sure the result is one version of the file" : ""
            download.emit(
                .warning(
                    "the server sends no strong ETag or Last-Modified, so it cannot prove the file is unchanged since the interrupted download\(hint)"
                ))
        case .same:
            break
        }
        let part = try claimedPart()
        let partSize = part.wasCreated ? nil : try? part.size()
        guard partSize == journal.size else {
            let found = partSize.map { "has \($0) bytes" } ?? "is missing"
            download.emit(
                .warning("\(partPath) \(found), but its journal expects \(journal.size); starting over"))
            try discardProgress()
            return nil
        }
        return journal
    }

    /// The journal to resume from: the durable one and the live one together. On the boot that wrote
    /// it (the page cache still holds what it records as written), the live journal counts from the
    /// first moment of the run, whatever happened to the segments since the last durable save (they
    /// split and merge all the time): the bytes either journal records as in the file are the union
    /// of both, re-tiled into segments. After a reboot only the durable journal counts.
    static func merge(durable: Journal?, live: Journal?, bootID: String?) -> Journal? {
        let fresh = live.flatMap { $0.bootID != nil && $0.bootID == bootID ? $0 : nil }
        guard let durable else { return fresh }
        guard let fresh, fresh.describesSameFile(as: durable) else { return durable }
        let sameBoot = durable.bootID != nil && durable.bootID == bootID
        var written: [Range<Int64>] = []
        var synced: [Range<Int64>] = []
        for entry in durable.segments {
            written.append(entry.start..<entry.start + (sameBoot ? entry.written : entry.durable))
            synced.append(entry.start..<entry.start + entry.durable)
        }
        for entry in fresh.segments { written.append(entry.start..<entry.start + entry.written) }
        let writtenUnion = Self.union(written)
        let syncedUnion = Self.union(synced)
        // Every segment start of both journals stays a boundary, and so does the start of every
        // written stretch, so no written byte falls outside its segment's written prefix.
        let starts = Set(
            durable.segments.map(\.start) + fresh.segments.map(\.start) + writtenUnion.map(\.lowerBound)
        )
        .sorted()
        var merged = durable
        merged.bootID = bootID
        merged.segments = starts.enumerated().map { index, start in
            let end = index + 1 < starts.count ? starts[index + 1] : durable.size
            let written = Self.coveredPrefix(from: start, to: end, in: writtenUnion)
            let synced = min(Self.coveredPrefix(from: start, to: end, in: syncedUnion), written)
            return Journal.Entry(start: start, end: end, durable: synced, written: written)
        }
        return merged
    }

    /// The ranges merged into sorted, disjoint ones (empty ones dropped).
    static func union(_ ranges: [Range<Int64>]) -> [Range<Int64>] {
        var result: [Range<Int64>] = []
        for range in ranges.filter({ !$0.isEmpty }).sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = result.last, range.lowerBound <= last.upperBound {
                result[result.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                result.append(range)
            }
        }
        return result
    }

    /// How many bytes from `start` on (up to `end`) the sorted, disjoint `ranges` cover without a gap.
    static func coveredPrefix(from start: Int64, to end: Int64, in ranges: [Range<Int64>]) -> Int64 {
        guard let range = ranges.first(where: { $0.lowerBound <= start && start < $0.upperBound }) else {
            return 0
        }
        return min(range.upperBound, end) - start
    }
}
