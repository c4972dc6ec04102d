import Foundation

/// A real server's access log, read back as ``AccessLogEntry`` values.
///
/// Servers write a line when a request is done, and some buffer (lighttpd; a log flush is asked for
/// before each read), so a test reads either with a condition it waits for
/// (``waitForEntries(since:timeout:until:)``) or once the log has stopped growing (``entries(since:)``).
/// ``mark()`` remembers where the log ends, to read only what a later run added.
public struct AccessLog: Sendable {
    /// A position in the log: entries after it belong to what happened since.
    public struct Mark: Sendable {
        /// The byte offset in the log file.
        public var offset: UInt64

        /// The start of the log.
        public static let start = Mark(offset: 0)
    }

    /// The log file's path.
    public let path: String
    let format: AccessLogFormat
    let flush: @Sendable () -> Void

    init(path: String, format: AccessLogFormat, flush: @escaping @Sendable () -> Void = {}) {
        self.path = path
        self.format = format
        self.flush = flush
    }

    /// The log's end, once it has stopped growing.
    public func mark() async -> Mark {
        Mark(offset: await settledSize())
    }

    /// Every entry after `mark`, read once the log has stopped growing for 200 ms (at most 5 s).
    public func entries(since mark: Mark = .start) async -> [AccessLogEntry] {
        _ = await settledSize()
        return read(since: mark)
    }

    /// Waits until `condition` holds for the entries after `mark` and returns them; throws after
    /// `timeout` with the entries seen.
    public func waitForEntries(
        since mark: Mark = .start, timeout: Duration = .seconds(10),
        until condition: ([AccessLogEntry]) -> Bool
    ) async throws -> [AccessLogEntry] {
        let deadline = ContinuousClock.now + timeout
        while true {
            flush()
            let entries = read(since: mark)
            if condition(entries) { return entries }
            if ContinuousClock.now >= deadline {
                throw RealServerError(
                    "\(path): the expected requests were not logged within \(timeout)",
                    serverOutput: entries.map(\.description).joined(separator: "\n"))
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// The entries after `mark` as the file holds them now.
    public func read(since mark: Mark = .start) -> [AccessLogEntry] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        guard (try? handle.seek(toOffset: mark.offset)) != nil, let data = try? handle.readToEnd() else {
            return []
        }
        // A line still being written has no newline yet: leave it for the next read.
        guard let lastNewline = data.lastIndex(of: UInt8(ascii: "\n")) else { return [] }
        let text = String(decoding: data[data.startIndex...lastNewline], as: UTF8.self)
        return text.split(separator: "\n").compactMap { format.parse($0) }
    }

    private func settledSize() async -> UInt64 {
        flush()
        var size = Self.size(of: path)
        var stableSince = ContinuousClock.now
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now - stableSince < .milliseconds(200), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(25))
            flush()
            let now = Self.size(of: path)
            if now != size {
                size = now
                stableSince = ContinuousClock.now
            }
        }
        return size
    }

    private static func size(of path: String) -> UInt64 {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        return (attributes?[.size] as? NSNumber)?.uint64Value ?? 0
    }
}
