import Fastpull
import FastpullCommandLine
import FastpullFixtures
import Foundation
import Testing

/// The library as a build tool calls it: the three-line download with a checksum, the batch API,
/// the events of a `Download`, and `plan()`.
@Suite("Library API for build tools")
struct LibraryAPITests {
    let server: FixtureServer
    let folder: URL

    init() throws {
        server = try FixtureServer()
        folder = try ScratchFolders.make("fastpull-api")
    }

    @Test func theThreeLineCallWithAChecksum() async throws {
        let url = server.url("/gen/300000?seed=4")
        let fileURL = folder.appendingPathComponent("a.bin")
        let hex = try BatchCLITests.sha256(FixtureContent.bytes(count: 300_000, seed: 4))
        // Exactly as the README and the issue write it:
        let report = try await Fastpull.download(
            from: url, to: fileURL, configuration: .init(checksums: [.sha256(hex)]))
        #expect(report.sha256 == hex)
        #expect(report.verifiedChecksums == [.sha256(hex)])
        #expect(
            FileManager.default.contents(atPath: fileURL.path)
                == Data(FixtureContent.bytes(count: 300_000, seed: 4)))
    }

    /// The entry points throw `FastpullError` itself (typed throws): a caller reads `error.code` and
    /// `error.httpStatus` with no cast. (This test would not compile with untyped throws.)
    @Test func theEntryPointsThrowFastpullErrorItself() async {
        let missing = server.url("/gen/10?status=404")
        let file = folder.appendingPathComponent("missing.bin")
        do {
            _ = try await Fastpull.download(
                from: missing, to: file, configuration: .init().with { $0.retries.limit = 0 })
            Issue.record("a 404 downloaded")
        } catch {
            #expect(error.code == .httpStatus)
            #expect(error.httpStatus == 404)
        }
        do {
            _ = try await Download(from: missing, to: file).plan()
            Issue.record("a 404 planned")
        } catch {
            #expect(error.httpStatus == 404)
        }
    }

    /// The library speaks its own language: a refused existing file says what happened and names the
    /// `Configuration` field as the remedy, never a command-line option; the command line puts its own
    /// words there. Before: "… already exists; use --force to replace it" from the library itself.
    @Test func errorsNameTheRemedyInTheLibrarysWords() async throws {
        let file = folder.appendingPathComponent("kept.bin")
        try Data("mine".utf8).write(to: file)
        var configuration = Configuration()
        configuration.resume.replacesExistingFile = false
        let outcomes = await Fastpull.download(
            [BatchItem(url: server.url("/gen/1000"), destination: file)], configuration: configuration,
            options: BatchOptions(existingFiles: .refuse))
        let error = try #require(outcomes.first?.error)
        #expect(error.code == .localIO)
        #expect(error.remedy == .replaceExisting)
        #expect(error.message.hasSuffix("kept.bin already exists"), "\(error.message)")
        #expect(
            "\(error)".hasSuffix(
                "already exists; set Configuration.resume.replacesExistingFile to replace it"))
        #expect(error.commandLineMessage.hasSuffix("already exists; use --force to replace it"))
        #expect(try Data(contentsOf: file) == Data("mine".utf8))
    }

    /// A lone download treats a file at its destination as the command line does without `--force`
    /// (before: it fetched every byte again and replaced whatever was there): the file a run saved is
    /// kept while the server offers that version, fetched again in its place once the server has
    /// another; a file no run saved is refused before a byte is fetched; replacing is asked for.
    @Test func aLoneDownloadKeepsRefusesOrReplacesAFileAtItsDestination() async throws {
        let served = try ScratchFolders.make("fastpull-served")
        try Data(FixtureContent.bytes(count: 300_000, seed: 7)).write(
            to: served.appendingPathComponent("v.bin"))
        var settings = FixtureServer.Configuration()
        settings.filesDirectory = served.path
        let files = try FixtureServer(settings)
        let url = files.url("/files/v.bin")
        let file = folder.appendingPathComponent("v.bin")

        let first = try await Fastpull.download(from: url, to: file)
        #expect(first.bytesFetched == 300_000)
        // Again: kept, nothing fetched, and the events say it was there already.
        files.resetStats()
        let again = Download(from: url, to: file)
        let events = again.events
        let log = Task {
            var all: [Event] = []
            for await event in events { all.append(event) }
            return all
        }
        let kept = try await again.run()
        #expect(kept.bytesFetched == 0)
        #expect(files.stats.bodyBytesSent == 0)
        let finished = await log.value.compactMap { event -> Event.Finished? in
            if case .finished(let done) = event.detail { done } else { nil }
        }
        #expect(finished.map(\.alreadyPresent) == [true])
        #expect(try Data(contentsOf: file) == Data(FixtureContent.bytes(count: 300_000, seed: 7)))

        // The server's file changes (another size, another time): fetched again, in its place.
        try Data(FixtureContent.bytes(count: 200_000, seed: 8)).write(
            to: served.appendingPathComponent("v.bin"))
        let changed = try await Fastpull.download(from: url, to: file)
        #expect(changed.bytesFetched == 200_000)
        #expect(try Data(contentsOf: file) == Data(FixtureContent.bytes(count: 200_000, seed: 8)))

        // A file no run saved: refused, untouched, nothing fetched.
        let mine = folder.appendingPathComponent("mine.bin")
        try Data("mine".utf8).write(to: mine)
        files.resetStats()
        do {
            _ = try await Fastpull.download(from: url, to: mine)
            Issue.record("a file no run saved was replaced")
        } catch {
            #expect(error.code == .localIO)
            #expect(error.remedy == .replaceExisting)
        }
        #expect(files.stats.bodyBytesSent == 0)
        #expect(try Data(contentsOf: mine) == Data("mine".utf8))
        // A batch refuses it too by default.
        let batched = await Fastpull.download([BatchItem(url: url, destination: mine)])
        #expect(batched.first?.error?.code == .localIO)
        #expect(files.stats.bodyBytesSent == 0)
        #expect(try Data(contentsOf: mine) == Data("mine".utf8))
        // Asked for, it is replaced.
        let replaced = try await Fastpull.download(
            from: url, to: mine, configuration: .init().with { $0.resume.replacesExistingFile = true })
        #expect(replaced.bytesFetched == 200_000)
        #expect(try Data(contentsOf: mine) == Data(FixtureContent.bytes(count: 200_000, seed: 8)))

        // With its server gone, a saved file can be neither kept nor replaced: the download fails
        // as the server does (before: "already exists", as if it were another program's file).
        files.stop()
        do {
            _ = try await Fastpull.download(
                from: url, to: file, configuration: .init().with { $0.retries.limit = 0 })
            Issue.record("a saved file was kept or replaced without its server")
        } catch {
            #expect(error.code == .network, "\(error)")
        }
        #expect(try Data(contentsOf: file) == Data(FixtureContent.bytes(count: 200_000, seed: 8)))
    }

    /// One file from two servers, in three lines: the report says what each served.
    @Test func aDownloadFromSeveralSources() async throws {
        let other = try FixtureServer()
        // 1 MB/s a connection: about 2 s, in two windows or more a connection, so that the second
        // server, probed while the download runs, gets its share: with one window a connection (4 MB)
        // every window could be asked of the first server before the second's probe was in.
        let path = "/gen/8000000?seed=6&rate=1000000"
        let hex = try BatchCLITests.sha256(FixtureContent.bytes(count: 8_000_000, seed: 6))
        let report = try await Download(
            from: [server.url(path), other.url(path)], to: folder.appendingPathComponent("two.bin"),
            configuration: .init(connections: .fixed(4), checksums: [.sha256(hex)])
        ).run()
        #expect(report.sha256 == hex)
        #expect(report.sources.map(\.url) == [server.url(path), other.url(path)])
        #expect(report.sources.allSatisfy { $0.bytes > 0 })
    }

    @Test func batchReturnsEveryOutcomeAndKeepsVerifiedFiles() async throws {
        let hex = try BatchCLITests.sha256(FixtureContent.bytes(count: 200_000, seed: 2))
        let items = [
            BatchItem(
                url: server.url("/gen/200000?seed=2"), destination: folder.appendingPathComponent("one.bin"),
                checksums: [.sha256(hex)]),
            BatchItem(
                url: server.url("/gen/10?status=404"), destination: folder.appendingPathComponent("two.bin")),
            BatchItem(url: server.url("/gen/1000"), destination: .folder(folder)),
        ]
        var configuration = Configuration()
        configuration.connections.maximumPerHost = 3
        let outcomes = await Fastpull.download(
            items, configuration: configuration, options: BatchOptions(parallelFiles: 2))
        #expect(outcomes.map(\.index) == [0, 1, 2])
        #expect(outcomes[0].report?.sha256 == hex)
        #expect(outcomes[1].error?.code == .httpStatus)
        #expect(outcomes[2].report?.outputPath == folder.appendingPathComponent("1000").path)
        #expect(!outcomes.contains { $0.alreadyPresent })

        // Again: the verified file is kept without a request; the one without a checksum is fetched.
        server.resetStats()
        let again = await Fastpull.download([items[0]])
        #expect(again.first?.alreadyPresent == true)
        #expect(again.first?.report?.bytesFetched == 0)
        #expect(server.stats.requests == 0)
    }

    /// The files of a batch share kept-alive connections, and a file named by the server is asked
    /// for once: twenty small files into a folder, two at a time, cost one request each (the probe
    /// that names the file is its GET, and its answer carries the file) over a handful of
    /// connections. Before: two requests each (a HEAD to name it, then a GET on a new connection),
    /// and before that three. Run again, every file is there: the probes are HEADs, no body is sent.
    @Test func aBatchReusesConnectionsAndProbesEachFileOnce() async throws {
        let count = 20
        let items = (0..<count).map { index in
            BatchItem(url: server.url("/gen/\(4000 + index)?seed=\(index)"), destination: .folder(folder))
        }
        server.resetStats()
        let outcomes = await Fastpull.download(items, options: BatchOptions(parallelFiles: 2))
        #expect(outcomes.allSatisfy { $0.report != nil }, "\(outcomes.compactMap(\.error))")
        for index in [0, count - 1] {
            let data = FileManager.default.contents(
                atPath: folder.appendingPathComponent("\(4000 + index)").path)
            #expect(data == Data(FixtureContent.bytes(count: 4000 + index, seed: UInt64(index))))
        }
        #expect(server.stats.requests == count)
        #expect(server.stats.connections <= 6, "\(server.stats.connections) connections for \(count) files")

        server.resetStats()
        let again = await Fastpull.download(items, options: BatchOptions(parallelFiles: 2))
        #expect(again.allSatisfy { $0.alreadyPresent }, "\(again.compactMap(\.error))")
        #expect(server.stats.bodyBytesSent == 0)
    }

    @Test func batchEventsAreTaggedAndEnd() async throws {
        let batch = Batch([
            BatchItem(url: server.url("/gen/100000"), destination: folder.appendingPathComponent("e1.bin")),
            BatchItem(
                url: server.url("/gen/5?status=403"), destination: folder.appendingPathComponent("e2.bin")),
        ])
        let collected = Task {
            var seen: [BatchEvent] = []
            for await event in batch.events { seen.append(event) }
            return seen
        }
        let outcomes = await batch.run()
        let events = await collected.value
        #expect(outcomes.count == 2)
        #expect(
            events.contains {
                $0.index == 0 && { if case .finished = $0.event.detail { true } else { false } }($0)
            })
        #expect(
            events.contains {
                $0.index == 1
                    && {
                        if case .failed(let error) = $0.event.detail {
                            error.code == .httpStatus
                        } else {
                            false
                        }
                    }(
                        $0)
            })
        #expect(batch.download(at: 0)?.progress.bytesWritten == 100_000)
    }

    /// An open batch takes items while it runs: one added while the run waits is fetched at once
    /// (its `finished` event comes before ``Batch/finishAdding()``), one whose output another item
    /// has fails at once, nothing is added once adding is finished, and the run ends with every
    /// outcome in order. A stopped run that waits for items ends too.
    @Test func anOpenBatchTakesItemsWhileItRuns() async throws {
        let batch = Batch([], open: true)
        let events = batch.events
        let run = Task { await batch.run() }
        let first = folder.appendingPathComponent("o1.bin")
        #expect(batch.add(BatchItem(url: server.url("/gen/4000?seed=1"), destination: first)) == 0)
        var finishedFirst = false
        var iterator = events.makeAsyncIterator()
        while let event = await iterator.next() {
            if event.index == 0, case .finished = event.event.detail {
                finishedFirst = true
                break
            }
        }
        #expect(finishedFirst)
        #expect(batch.isOpen)
        #expect(batch.add(BatchItem(url: server.url("/gen/5000"), destination: first)) == 1)
        let second = folder.appendingPathComponent("o2.bin")
        #expect(batch.add(BatchItem(url: server.url("/gen/6000?seed=2"), destination: second)) == 2)
        batch.finishAdding()
        #expect(batch.add(BatchItem(url: server.url("/gen/1"), destination: second)) == nil)
        let outcomes = await run.value
        #expect(outcomes.map(\.index) == [0, 1, 2])
        #expect(outcomes[0].error == nil && outcomes[2].error == nil)
        #expect(
            outcomes[1].error?.message.contains("o1.bin") == true, "\(String(describing: outcomes[1].error))")
        #expect(try Data(contentsOf: first) == Data(FixtureContent.bytes(count: 4000, seed: 1)))
        #expect(try Data(contentsOf: second) == Data(FixtureContent.bytes(count: 6000, seed: 2)))

        let waiting = Batch([], open: true)
        let stopped = Task { await waiting.run() }
        stopped.cancel()
        #expect(await stopped.value.isEmpty)
    }

    /// A batch told that nobody reads its events keeps none: asked for after the run, the sequence
    /// has already ended, empty; the files are fetched all the same.
    @Test func aBatchThatKeepsNoEventsStillFetches() async throws {
        let batch = Batch(
            [
                BatchItem(
                    url: server.url("/gen/70000"), destination: folder.appendingPathComponent("q1.bin")),
                BatchItem(url: server.url("/gen/5"), destination: folder.appendingPathComponent("q2.bin")),
            ], options: BatchOptions(keepsEvents: false))
        let outcomes = await batch.run()
        #expect(outcomes.allSatisfy { $0.error == nil }, "\(outcomes.compactMap(\.error))")
        var late: [BatchEvent] = []
        for await event in batch.events { late.append(event) }
        #expect(late.isEmpty, "\(late.count) events kept")
        let kept = Batch(
            [BatchItem(url: server.url("/gen/5"), destination: folder.appendingPathComponent("q3.bin"))])
        _ = await kept.run()
        var all: [BatchEvent] = []
        for await event in kept.events { all.append(event) }
        #expect(all.contains { if case .finished = $0.event.detail { true } else { false } })
    }

    @Test func downloadEventsTellTheWholeStoryAndEnd() async throws {
        let download = Download(
            from: server.url("/gen/\(3 << 20)?rate=300000"), to: folder.appendingPathComponent("ev.bin"),
            configuration: Configuration(connections: 2))
        let events = download.events
        let collected = Task {
            var names: [String] = []
            for await event in events {
                switch event.detail {
                case .probe(let probe): names.append("probe:\(probe.size ?? -1)")
                case .plan(let plan): names.append("plan:\(plan.connections)")
                case .progress(let progress):
                    names.append("progress")
                    // Once bytes have come, every progress event has a speed, the first one too (it
                    // used to say 0 B/s).
                    if progress.bytes > 0 && progress.bytesPerSecond == 0 { names.append("bytes at 0 B/s") }
                case .verified: names.append("verified")
                case .finished(let finished): names.append("finished:\(finished.size)")
                case .failed: names.append("failed")
                default: break
                }
            }
            return names
        }
        let report = try await download.run()
        // The sequence ends by itself after the last event.
        let names = await collected.value
        #expect(names.first == "probe:\(3 << 20)")
        #expect(names.dropFirst().first == "plan:2")
        #expect(names.contains("progress"), "a progress event about once a second: \(names)")
        #expect(!names.contains("bytes at 0 B/s"), "\(names)")
        #expect(Array(names.suffix(2)) == ["verified", "finished:\(report.size)"])
        let map = download.completionMap(cells: 10)
        #expect(map == Array(repeating: 1.0, count: 10))
    }

    @Test func planProbesWithoutWriting() async throws {
        let destination = folder.appendingPathComponent("never.bin")
        let plan = try await Download(
            from: server.url("/gen/\(5 << 20)"), to: destination, configuration: Configuration(connections: 2)
        ).plan()
        #expect(plan.probe.size == 5 << 20)
        #expect(plan.probe.acceptsRanges)
        #expect(plan.probe.etag == "\"gen-\(5 << 20)-1\"")
        #expect(plan.connections == 2)
        #expect(plan.segments.first?.lowerBound == 0)
        #expect(plan.segments.last?.upperBound == 5 << 20)
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        #expect(!FileManager.default.fileExists(atPath: destination.path + ".part"))
    }

    /// A batch item's folder must be a file URL: another one is refused as a usage error, never
    /// taken for a path on this machine.
    @Test func aFolderThatIsNoFileURLIsRefused() async throws {
        let outcomes = await Fastpull.download([
            BatchItem(
                url: server.url("/gen/\(64 << 10)"),
                destination: .folder(try #require(URL(string: "https://example.org/dir/"))))
        ])
        let error = try #require(outcomes.first?.error)
        #expect(error.code == .usage, "\(error)")
        #expect(error.message.contains("must be a file URL"), "\(error.message)")
    }

    /// A plan looks at no path at all: not the destination, and not a stand-in for it in the
    /// temporary folder, where a folder of that name once made every plan (and every batch's
    /// naming probe) fail.
    @Test func planLooksAtNoPath() async throws {
        let standIn = FileManager.default.temporaryDirectory.appendingPathComponent("fastpull-plan")
        let made =
            (try? FileManager.default.createDirectory(at: standIn, withIntermediateDirectories: false)) != nil
        defer { if made { try? FileManager.default.removeItem(at: standIn) } }
        var isFolder: ObjCBool = false
        #expect(
            FileManager.default.fileExists(atPath: standIn.path, isDirectory: &isFolder) && isFolder.boolValue
        )
        let plan = try await Download(
            from: server.url("/gen/\(1 << 20)"), to: folder.appendingPathComponent("missing/x.bin")
        ).plan()
        #expect(plan.probe.size == 1 << 20)
    }
}
