import Foundation

extension Pipeline {
    /// Where a segmented download starts: the `.part` file, the segments with their progress, and
    /// the journal template that records them.
    struct Start {
        var file: OutputFile
        var segments: [Segment]
        var journal: Journal
        var keptBytes: Int64
    }

    /// Continues from a journal that matches the remote file, or starts a fresh `.part` file. Every
    /// reason not to resume is told to the user through an event.
    func resumeOrCreate(remote: RemoteFile, size: Int64) throws -> Start {
        let bootID = JournalStore.currentBootID()
        var template = Journal(
            url: download.url.absoluteString, finalURL: remote.finalURL.absoluteString, size: size,
            etag: remote.etag, lastModified: remote.lastModified,
            checksums: configuration.checksums.map(\.description), bootID: bootID, segments: [])

        if let journal = try usableJournal(remote: remote, bootID: bootID) {
            do {
                let file = try OutputFile(openingExisting: partPath)
                let segments = journal.segmentsToResume(currentBootID: bootID)
                let kept = segments.reduce(0) { $0 + $1.written }
                template.segments = journal.segments
                counters.bytesWritten.store(kept, ordering: .relaxed)
                download.emit(.resumed(keptBytes: kept, totalBytes: size))
                return Start(file: file, segments: segments, journal: template, keptBytes: kept)
            } catch {
                throw Failure(error, url: remote.finalURL).error
            }
        }

        let plan = Planner.plan(
            size: size, connections: configuration.connectionLimit,
            minimumSegmentSize: configuration.minimumSegmentSize)
        do {
            let file = try OutputFile(creatingAt: partPath)
            try file.preallocate(size: size)
            template.segments = plan.segments.map {
                Journal.Entry(start: $0.start, end: $0.end, durable: 0, written: 0)
            }
            return Start(file: file, segments: plan.segments, journal: template, keptBytes: 0)
        } catch {
            try? FileSystem.remove(partPath)
            throw Failure(error, url: remote.finalURL).error
        }
    }

    /// The journal to resume from, or nil after discarding whatever stood in the way (and saying why).
    private func usableJournal(remote: RemoteFile, bootID: String?) throws -> Journal? {
        let store = store
        guard store.exists else {
            if FileSystem.exists(partPath) {
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
        guard journal.url == download.url.absoluteString else {
            download.emit(
                .warning(
                    "the journal \(store.durablePath) belongs to \(journal.url), not this URL; starting over")
            )
            try discardProgress()
            return nil
        }
        switch journal.matches(remote) {
        case .changed(let reason):
            guard configuration.restartWhenRemoteChanges else {
                throw FastpullError(
                    .remoteChanged,
                    "\(download.url.absoluteString) changed since the interrupted download (\(reason)); run without --no-restart to start over, or with --restart"
                )
            }
            download.emit(
                .restarting(reason: "the remote file changed since the interrupted download: \(reason)"))
            try discardProgress()
            return nil
        case .unverifiable:
            let hint =
                configuration.checksums.isEmpty
                ? "; give --checksum to make sure the result is one version of the file" : ""
            download.emit(
                .warning(
                    "the server sends no ETag or Last-Modified, so it cannot prove the file is unchanged since the interrupted download\(hint)"
                ))
        case .same:
            break
        }
        let partSize = Self.fileSize(partPath)
        guard partSize == journal.size else {
            let found = partSize.map { "has \($0) bytes" } ?? "is missing"
            download.emit(
                .warning("\(partPath) \(found), but its journal expects \(journal.size); starting over"))
            try discardProgress()
            return nil
        }
        return journal
    }

    /// The durable journal, improved by the live one where it is newer and from the same boot.
    static func merge(durable: Journal?, live: Journal?, bootID: String?) -> Journal? {
        guard let live, live.bootID != nil, live.bootID == bootID else { return durable }
        guard var merged = durable else { return live }
        guard
            live.url == merged.url, live.size == merged.size, live.etag == merged.etag,
            live.lastModified == merged.lastModified, live.segments.count == merged.segments.count,
            zip(live.segments, merged.segments).allSatisfy({ $0.start == $1.start && $0.end == $1.end })
        else { return durable }
        merged.bootID = bootID
        for index in merged.segments.indices {
            merged.segments[index].written = max(merged.segments[index].written, live.segments[index].written)
        }
        return merged
    }

    private static func fileSize(_ path: String) -> Int64? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            attributes[.type] as? FileAttributeType == .typeRegular
        else { return nil }
        return (attributes[.size] as? NSNumber)?.int64Value
    }
}
