import Foundation
import Synchronization

/// Downloads `url` to `file` with parallel ranged connections and verifies it before it appears.
///
/// ```swift
/// let report = try await Fastpull.download(from: url, to: fileURL, configuration: .init(checksums: [.sha256(hex)]))
/// ```
///
/// - Returns: a ``Report`` of the verified file.
/// - Throws: ``FastpullError``; its ``FastpullError/code`` says what kind of failure it was.
public func download(from url: URL, to file: URL, configuration: Configuration = .init()) async throws
    -> Report
{
    try await Download(from: url, to: file, configuration: configuration).run()
}

/// One download: create it, optionally watch ``progress`` from another task, and ``run()`` it.
/// Cancelling the task that runs it stops every connection promptly.
public final class Download: Sendable {
    /// The URL asked for.
    public let url: URL
    /// Where the verified file goes.
    public let destination: URL
    /// How the download runs.
    public let configuration: Configuration
    private let counters = TransferCounters()
    private let eventStream: AsyncStream<Event>
    private let eventSink: AsyncStream<Event>.Continuation
    private let running = Mutex<Task<Report, any Error>?>(nil)

    /// Prepares a download; nothing happens until ``run()``.
    public init(from url: URL, to destination: URL, configuration: Configuration = .init()) {
        self.url = url
        self.destination = destination
        self.configuration = configuration
        (eventStream, eventSink) = AsyncStream.makeStream(
            of: Event.self, bufferingPolicy: .bufferingNewest(256))
    }

    /// Notes and warnings while the download runs (resumed, restarting, warnings). One consumer.
    public var events: AsyncStream<Event> { eventStream }

    func emit(_ event: Event) { eventSink.yield(event) }

    /// How far the download has come. Safe to read from any task while ``run()`` is going.
    public var progress: TransferProgress { counters.snapshot }

    /// Probes, fetches, verifies and moves the file into place.
    ///
    /// - Throws: ``FastpullError``. On failure the output path holds nothing new.
    public func run() async throws -> Report {
        let task = Task { [self] in
            do {
                return try await Pipeline(download: self, counters: counters).run()
            } catch let error as FastpullError {
                throw error
            } catch {
                throw Failure(error, url: url).error
            }
        }
        running.withLock { $0 = task }
        defer { running.withLock { $0 = nil } }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    /// Stops every connection and saves the journal; ``run()`` then throws an
    /// ``FastpullError/Code/interrupted`` error. Call ``resume()`` (or ``run()``) later to continue
    /// from the journal.
    public func pause() {
        running.withLock { $0 }?.cancel()
    }

    /// Continues a paused or interrupted download from its journal.
    public func resume() async throws -> Report {
        try await run()
    }
}
