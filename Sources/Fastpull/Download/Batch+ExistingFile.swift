import FastpullHTTP
import FastpullNet
import FoundationEssentials
import Glibc

/// Decides whether a file already at a destination is the one asked for: it is when it matches every
/// checksum known before any request (given ones, and the checksum files' entries for its name).
/// Without a known checksum a file is never taken as right.
enum ExistingFile {
    /// The checksums `file` must match, from the configuration and its checksum files.
    static func expectations(for file: URL, url: URL, configuration: Configuration) -> [ChecksumExpectation] {
        var expectations = configuration.knownChecksums
        var names: [String] = []
        for name in [file.lastPathComponent, url.lastPathComponent] where !name.isEmpty && name != "/" {
            if !names.contains(name) { names.append(name) }
        }
        for checksumFile in configuration.integrity.checksumFiles {
            if let checksum = ChecksumFile.parse(
                checksumFile.text, fileNames: names, checksumFileName: checksumFile.source)
            {
                expectations.append(ChecksumExpectation(checksum, source: .checksumFile(checksumFile.source)))
            }
        }
        return expectations
    }

    /// A report for `file` when it matches every known checksum; nil when there is none, when it does
    /// not match, or when it cannot be read. Hashes on a thread of its own.
    static func verify(_ file: URL, url: URL, configuration: Configuration, started: ContinuousClock.Instant)
        async -> Report?
    {
        let expectations = expectations(for: file, url: url, configuration: configuration)
        guard !expectations.isEmpty, expectations.allSatisfy({ $0.checksum.expectedBytes != nil }) else {
            return nil
        }
        let path = file.path(percentEncoded: false)
        let algorithms = configuration.digestAlgorithms(needing: expectations.map(\.checksum.digestAlgorithm))
        guard let (size, digests) = await hashOnAThread(path, algorithms: algorithms) else { return nil }
        var checks: [Report.ChecksumCheck] = []
        var verified: [Checksum] = []
        for expectation in expectations {
            guard case .matched = expectation.verdict(for: digests) else { return nil }
            checks.append(
                Report.ChecksumCheck(
                    expected: expectation.checksum, source: Report.ChecksumCheck.Source(expectation.source),
                    verdict: .matched))
            if !verified.contains(expectation.checksum) { verified.append(expectation.checksum) }
        }
        let seconds = (ContinuousClock.now - started).seconds
        let byName = Dictionary(uniqueKeysWithValues: digests.map { ($0.key.name, Digest.hex($0.value)) })
        return Report(
            url: url, finalURL: url, outputPath: path, size: size, seconds: seconds, bytesFetched: 0,
            sha256: byName["sha256"] ?? "", verifiedChecksums: verified, connections: 0, segments: 0,
            retries: 0, resumedBytes: 0, rangesSupported: false, digests: byName, checks: checks,
            transferSeconds: 0, hashTailSeconds: seconds)
    }

    /// What a download does with a file already at its destination.
    enum Decision {
        /// Keep it: it is the file asked for (it matches every known checksum, or it is the version
        /// a run saved and the server still offers). The caller tells it as finished, already present.
        case keep(Report)
        /// Do not download: the file is not shown to be the one asked for, and may not be replaced.
        case refuse(FastpullError)
        /// Download, replacing the file once verified when `replacing` (the server offers another
        /// version of a file a run saved); `probed` is what a probe found on the way, if any.
        case fetch(replacing: Bool, probed: Probed?)
    }

    /// Decides about the regular file `file` at a download's destination, the same way for a batch
    /// item and a lone download: kept when it matches every known checksum or when it is a saved
    /// version the server still offers; fetched again in its place when the server offers another;
    /// otherwise refused when `refusing` (the command line without `--force`, and the library's
    /// default), unless the configuration may continue it (`-c`), or fetched to replace it.
    static func decide(
        _ file: URL, url: URL, configuration: Configuration, refusing: Bool, connections: ConnectionCache,
        client: FastpullClient, emit: (Event) -> Void
    ) async -> Decision {
        let started = ContinuousClock.now
        if let report = await verify(file, url: url, configuration: configuration, started: started) {
            emit(.verified(Event.Verification(digests: report.digests, checks: report.checks)))
            return .keep(report)
        }
        // A file this URL's download saved before: kept when the server still offers that version,
        // fetched again in its place when not. Not when a checksum is expected of it: the file just
        // failed that, and only the checksum decides.
        let expectations = expectations(for: file, url: url, configuration: configuration)
        let rerun =
            expectations.isEmpty
            ? await rerun(
                file, url: url, configuration: configuration, connections: connections, client: client,
                started: started) : nil
        switch rerun {
        case .unchanged(let report)?:
            return .keep(report)
        case .changed(let reason, let found)?:
            emit(.warning("\(reason); downloading it again"))
            return .fetch(replacing: true, probed: found)
        case .changedHere(let reason, let found)?:
            // Its bytes are not those saved: never kept as complete. Replaced where files may be,
            // as any file that does not match what it should; refused otherwise, saying why.
            guard !refusing else {
                found.answer?.discard()
                return .refuse(
                    FastpullError(.integrity, "\(reason); nothing downloaded", remedy: .replaceExisting))
            }
            emit(.warning("\(reason); downloading it again"))
            return .fetch(replacing: false, probed: found)
        case .unchecked(let error)?:
            return .refuse(error)
        case nil:
            break
        }
        // `-c`: a file there that is not this download's is continued if it is its beginning (the
        // download proves it, or fails and leaves it as it is).
        guard refusing, !configuration.resume.adoptsPartialFile else {
            return .fetch(replacing: false, probed: nil)
        }
        let reason = expectations.isEmpty ? "" : " and does not match its checksum"
        return .refuse(
            FastpullError(
                .localIO, "\(file.path(percentEncoded: false)) already exists\(reason)",
                remedy: .replaceExisting))
    }

    /// What a file Fastpull saved earlier (it carries an ``OriginRecord`` for this URL) is now.
    enum Rerun {
        /// Still the version the server offers, and as it was saved: nothing to fetch.
        case unchanged(Report)
        /// The server offers another version: fetch it again, in its place (the file is as it was
        /// saved, so nothing of the user's is lost).
        case changed(reason: String, probed: Probed)
        /// The server still offers the version saved, but the file's bytes, hashed now, are not the
        /// ones saved although its size and modification time are: it changed since (a disk fault, a
        /// tool that kept the time). It is never reported complete.
        case changedHere(reason: String, probed: Probed)
        /// The server could not be asked (it is down, it answered with an error, the run was
        /// stopped): what it offers now is not known, so the file is neither kept nor replaced.
        case unchecked(FastpullError)
    }

    /// Whether `file` is a download of `url` made earlier, and what it is now: the record on it is
    /// checked against the file (size and modification time) and against a fresh probe (size and
    /// validators). Nil for a file without a record for this URL, one changed here since it was
    /// saved, or when the probe tells nothing; ``Rerun/unchecked(_:)`` when the probe failed.
    static func rerun(
        _ file: URL, url: URL, configuration: Configuration, connections: ConnectionCache,
        client: FastpullClient,
        started: ContinuousClock.Instant
    ) async -> Rerun? {
        let path = file.path(percentEncoded: false)
        // A file changed here since it was saved is the user's now: today's rule applies to it.
        guard let record = OriginRecord.read(path: path), record.url == url.redactedForDisplay,
            OriginRecord.fileIsAsSaved(path, record: record)
        else { return nil }
        let planned: Planned
        do {
            planned = try await Download(
                from: url, to: file, configuration: configuration, observer: nil,
                sharedConnections: connections, client: client
            ).planned()
        } catch let error as FastpullError {
            return .unchecked(error)
        } catch {
            return .unchecked(FastpullError(.internalError, "\(error)"))
        }
        let remote = planned.probed.remote
        switch record.describes(remote) {
        case true?:
            // A digest reported is one computed: asked for, it is read from the file as it is now
            // (not fetched again); the recorded one is reported as recorded, and a file whose bytes
            // no longer have it changed since it was saved.
            var sha256 = ""
            if configuration.integrity.verifiesSavedFiles, record.sha256.isEmpty {
                return .changedHere(
                    reason:
                        "\(path) has no SHA-256 recorded (it was saved without --sha256), so it cannot be verified",
                    probed: planned.probed)
            }
            if configuration.integrity.computesSHA256 || configuration.integrity.verifiesSavedFiles {
                let hashed = await hashOnAThread(path, algorithms: [.sha256])
                guard let digest = hashed?.1[.sha256], hashed?.0 == record.size else { return nil }
                sha256 = Digest.hex(digest)
                if !record.sha256.isEmpty, sha256 != record.sha256 {
                    return .changedHere(
                        reason:
                            "\(path) changed since it was saved: its SHA-256 is now \(sha256), not the \(record.sha256) recorded then",
                        probed: planned.probed)
                }
            }
            var report = Report(
                url: url, finalURL: remote.finalURL, outputPath: path, size: record.size,
                seconds: (ContinuousClock.now - started).seconds, bytesFetched: 0, sha256: sha256,
                verifiedChecksums: [], connections: 0, segments: 0, retries: 0, resumedBytes: 0,
                rangesSupported: remote.acceptsRanges,
                digests: sha256.isEmpty ? [:] : ["sha256": sha256], checks: [],
                transferSeconds: 0, hashTailSeconds: 0)
            report.recordedSHA256 = record.sha256
            return .unchanged(report)
        case false?:
            return .changed(
                reason: "\(url.redactedForDisplay) changed on the server since \(path) was saved",
                probed: planned.probed)
        case nil:
            return nil
        }
    }

    /// ``hash(_:algorithms:)`` on a thread of its own, off Swift's cooperative threads.
    private static func hashOnAThread(_ path: String, algorithms: [Digest.Algorithm]) async -> (
        Int64, [Digest.Algorithm: [UInt8]]
    )? {
        await withCheckedContinuation { continuation in
            OSThread.detach { continuation.resume(returning: hash(path, algorithms: algorithms)) }
        }
    }

    /// The size and digests of the regular file at `path`, read once; nil when it cannot be read.
    private static func hash(_ path: String, algorithms: [Digest.Algorithm]) -> (
        Int64, [Digest.Algorithm: [UInt8]]
    )? {
        // Only a regular file: opening a FIFO would wait for a writer.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        let set = DigestSet(algorithms)
        var size: Int64 = 0
        while true {
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { break }
            set.update(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            size += Int64(count)
        }
        return (size, set.finalize())
    }
}
