import Fastpull
import FastpullCommandLine
import FastpullNet
import FoundationEssentials
import Glibc
import Synchronization

/// `-i -` read as it comes: a thread of its own reads standard input and adds each file to the open
/// batch as soon as its entry is complete — once the next entry's line arrives, at the end of input,
/// or when no line has come for ``pause`` after a whole line (a person pasting URLs, a script that
/// prints one when it knows it). The batch closes at the end of input. A bad line is said at once and
/// its entry skipped (never fetched without an option its list gave it); the run then exits with the
/// usage code unless a file failed worse.
final class StreamedInput: Sendable {
    /// How long the input may stay silent before the entry read last starts: long enough for a
    /// script to write a file's option lines after its URL line, short beside any download.
    static let pause: Duration = .milliseconds(200)

    private let badLines = Atomic<Int>(0)

    /// How many lines could not be read.
    var badLineCount: Int { badLines.load(ordering: .relaxed) }

    /// Starts reading `descriptor` into `batch`, each entry's job made by `maker` and handed to
    /// `prepare` first (it makes the output's folders); problems go to `console`.
    init(
        _ descriptor: Int32, into batch: Batch, maker: CommandOptions.JobMaker, console: Console,
        prepare: @escaping @Sendable (CommandOptions.Job) -> Void
    ) {
        OSThread.detach { [self] in
            var reader = BatchFile.Reader(source: "-")
            func add(_ line: BatchFile.Line?) {
                guard let line else { return }
                do {
                    let job = try maker.job(for: line)
                    prepare(job)
                    batch.add(job.item)
                } catch {
                    problem(error, console)
                }
            }
            func read(_ bytes: ArraySlice<UInt8>) {
                let read = reader.read(Substring(decoding: bytes, as: UTF8.self))
                add(read.completed)
                if let error = read.problem { problem(error, console) }
            }
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            var partial: [UInt8] = []
            let pauseMilliseconds = Int32(Self.pause.components.attoseconds / 1_000_000_000_000_000)
            reading: while true {
                var watch = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let ready = poll(&watch, 1, pauseMilliseconds)
                if ready < 0 {
                    if errno == EINTR { continue }
                    break
                }
                // Silence with half a line in: the line is not complete, and neither is its entry.
                if ready == 0 {
                    if partial.isEmpty { add(reader.flush()) }
                    continue
                }
                let count = buffer.withUnsafeMutableBytes {
                    Glibc.read(descriptor, $0.baseAddress!, $0.count)
                }
                if count < 0, errno == EINTR || errno == EAGAIN { continue }
                guard count > 0 else { break reading }
                var start = 0
                for position in 0..<count where buffer[position] == UInt8(ascii: "\n") {
                    if partial.isEmpty {
                        read(buffer[start..<position])
                    } else {
                        partial += buffer[start..<position]
                        read(partial[...])
                        partial.removeAll(keepingCapacity: true)
                    }
                    start = position + 1
                }
                partial += buffer[start..<count]
            }
            if !partial.isEmpty { read(partial[...]) }
            add(reader.flush())
            batch.finishAdding()
        }
    }

    private func problem(_ error: UsageError, _ console: Console) {
        badLines.add(1, ordering: .relaxed)
        console.note(error.message)
    }
}
