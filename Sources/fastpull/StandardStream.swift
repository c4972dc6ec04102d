import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// Writes to standard output or standard error with `write(2)`, never through a buffer that would
/// trap or raise when the reader has gone. SIGPIPE is ignored for the whole process (see
/// ``ignoreBrokenPipes()``), so a closed pipe shows up here as a failed write instead of killing the
/// download.
enum StandardStream {
    /// Stops SIGPIPE from killing the process: `fastpull URL 2>&1 | head -c1` must not lose a
    /// download because the reader stopped reading.
    static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// Writes all of `text` to `descriptor`; false when the descriptor refused it (the reader closed a
    /// pipe, a full disk behind a redirection).
    @discardableResult
    static func write(_ text: String, to descriptor: Int32) -> Bool {
        var bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let count = bytes.withUnsafeMutableBytes {
                Glibc.write(descriptor, $0.baseAddress! + done, $0.count - done)
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            done += count
        }
        return true
    }

    /// Everything `descriptor` gives until its end; nil when reading fails.
    static func readAll(from descriptor: Int32) -> Data? {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress!, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { return data }
            data.append(contentsOf: buffer[..<count])
        }
    }
}
