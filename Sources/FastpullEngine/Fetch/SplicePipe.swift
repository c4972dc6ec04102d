import CLinux
import FastpullNet
import Glibc

/// A kernel pipe through which a plain-HTTP body moves from its socket into the output file without
/// passing through user memory: `splice(2)` socket → pipe, then pipe → file at the body's offset. That
/// saves the copy into a buffer and the copy out of it that `recv` plus `pwrite` cost.
///
/// One per connection thread, used from that thread only. Each ``land(from:upTo:claim:at:)`` leaves
/// the pipe empty, whatever fails; a pipe it cannot empty is replaced.
package final class SplicePipe {
    private var readEnd: Int32 = -1
    private var writeEnd: Int32 = -1
    /// How many bytes the pipe holds at once (1 MiB where the system allows, else its default).
    private(set) var capacity = 0
    /// False once the output file refused spliced data (`EINVAL`): the fetcher copies from then on.
    private(set) var fileAcceptsSplice = true

    /// Nil when no pipe can be created, or when it would leave the process no descriptor free (the
    /// body is then copied: Dispatch, under Swift's tasks, stops the process when it finds none; see
    /// ``DescriptorBudget/leavesOneFree``).
    init?() {
        guard open() else { return nil }
        guard DescriptorBudget.hasOneFree else {
            closeEnds()
            return nil
        }
    }

    deinit { closeEnds() }

    /// Whether a body arriving on `transport` can be spliced into the file.
    func canSplice(from transport: any Transport) -> Bool {
        fileAcceptsSplice && readEnd >= 0 && transport.canSplice
    }

    /// Moves what `transport` has received (up to `limit` bytes and the pipe's capacity) into the
    /// pipe, asks `claim` how many of them may be written, and writes that many into `file` at
    /// `offset`. Returns (bytes received, bytes written); received is 0 only at end of stream. Bytes
    /// received but not allowed are dropped.
    func land(
        from transport: any Transport, upTo limit: Int, claim: (Int) -> Int, into file: OutputFile,
        at offset: Int64
    ) throws -> (received: Int, written: Int) {
        let received: Int
        do {
            received = try transport.splice(into: writeEnd, count: min(limit, capacity))
        } catch {
            replace()
            throw error
        }
        guard received > 0 else { return (0, 0) }
        let allowed = claim(received)
        do {
            if allowed > 0 { try write(allowed, into: file, at: offset) }
            if allowed < received { try discard(received - allowed) }
        } catch {
            replace()
            throw error
        }
        return (received, allowed)
    }

    /// Pipe → file; where the file system takes no splices, reads the bytes out and `pwrite`s them.
    private func write(_ count: Int, into file: OutputFile, at offset: Int64) throws {
        if fileAcceptsSplice {
            switch file.splice(fromPipe: readEnd, count: count, at: offset) {
            case .success:
                return
            case .failure(let error) where error.errno == EINVAL:
                // Nothing was moved: the bytes are all still in the pipe.
                fileAcceptsSplice = false
            case .failure(let error):
                throw error
            }
        }
        try copy(count) { (bytes: UnsafeRawBufferPointer, written: Int) throws -> Void in
            try file.write(bytes, at: offset + Int64(written))
        }
    }

    /// Reads and drops `count` bytes from the pipe.
    private func discard(_ count: Int) throws {
        try copy(count) { _, _ in }
    }

    /// Reads `count` bytes out of the pipe through a small buffer, handing each part to `body` with
    /// the number of bytes handed over before it.
    private func copy(_ count: Int, _ body: (UnsafeRawBufferPointer, Int) throws -> Void) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        var done = 0
        while done < count {
            let result = Glibc.read(readEnd, buffer.baseAddress, min(buffer.count, count - done))
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else { throw NetError.system(call: "read", errno: result < 0 ? errno : EIO) }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<result]), done)
            done += result
        }
    }

    private func open() -> Bool {
        var ends: [Int32] = [-1, -1]
        guard fp_pipe_cloexec(&ends) == 0 else { return false }
        readEnd = ends[0]
        writeEnd = ends[1]
        _ = fp_set_pipe_size(writeEnd, 1 << 20)
        capacity = Int(max(fp_pipe_size(writeEnd), 4096))
        return true
    }

    /// A pipe that may hold stray bytes is closed and a fresh one opened.
    private func replace() {
        closeEnds()
        if !open() { capacity = 0 }
    }

    private func closeEnds() {
        if readEnd >= 0 { Glibc.close(readEnd) }
        if writeEnd >= 0 { Glibc.close(writeEnd) }
        readEnd = -1
        writeEnd = -1
    }
}
