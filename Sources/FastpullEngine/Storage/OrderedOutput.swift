import FoundationEssentials
import Glibc
import Synchronization

/// An output that takes the file's bytes only in order — standard output, a pipe, a FIFO, a device —
/// fed by connections that receive them out of order. Connections write into a ring of `capacity`
/// bytes at each byte's offset; ``drain(scheduler:size:algorithms:)`` hands the contiguous prefix to
/// the descriptor as it grows, hashing it on the way, and moves the scheduler's horizon on, so that no
/// connection is ever given a window past what the ring can hold. Memory stays at `capacity` whatever
/// the file's size, and the download runs at the speed of the piece the reader needs next.
///
/// `@unchecked Sendable`: connections write disjoint ranges of the ring (the scheduler gives every
/// byte one owner, and never a window past the horizon, so a part of the ring is written again only
/// after the drain has passed it); the drain reads only below the scheduler's frontier, which it learns
/// under the scheduler's lock after the writers' commits, so every byte it reads was written before.
/// The digests a stopped drain leaves are written by the drain's thread before its task ends and read
/// after that task was awaited.
package final class OrderedOutput: ByteDestination, @unchecked Sendable {
    /// Where the bytes go, in order.
    let descriptor: Int32
    /// What errors call the descriptor: a path, or `standard output`.
    let name: String
    let capacity: Int
    private let ring: UnsafeMutableRawBufferPointer
    private let handedOver = Atomic<Int64>(0)
    /// The digests of the bytes handed over, when the drain was stopped before the end: written by
    /// the drain just before it returns, read (``takeDigestsOfHandedOver()``) only once the task that
    /// ran the drain has been awaited.
    private var stoppedDigests: DigestSet?
    /// Where the time spent handing bytes to the descriptor (waiting for its reader) is counted.
    let wait: WaitClock

    /// The most a ring holds by default: far fewer bytes than a file, enough for every connection to
    /// have a window in flight, each large enough that its request's cost is small. With 16 MiB, 1 GiB
    /// from nginx (`tcp_nopush`, whose last packet of each answer waits) to /dev/null took 0.8-1.0 s
    /// with `-n 4` and 1.0-1.5 s with `-n 64`, against 0.4-0.5 and 0.6-0.7 s with 64 MiB (curl:
    /// 0.55-0.75 s).
    static let defaultCapacity = 64 << 20

    init(
        descriptor: Int32, name: String, capacity: Int = OrderedOutput.defaultCapacity,
        wait: WaitClock = WaitClock()
    ) {
        self.descriptor = descriptor
        self.name = name
        self.capacity = capacity
        self.wait = wait
        ring = .allocate(byteCount: capacity, alignment: 4096)
    }

    deinit { ring.deallocate() }

    /// Bytes handed to the descriptor so far.
    var bytesHandedOver: Int64 { handedOver.load(ordering: .acquiring) }

    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        precondition(
            offset >= bytesHandedOver && offset + Int64(bytes.count) <= bytesHandedOver + Int64(capacity))
        var done = 0
        while done < bytes.count {
            let slot = Int((offset + Int64(done)) % Int64(capacity))
            let count = min(bytes.count - done, capacity - slot)
            (ring.baseAddress! + slot).copyMemory(from: bytes.baseAddress! + done, byteCount: count)
            done += count
        }
    }

    package func restart() throws {
        guard bytesHandedOver == 0 else { throw OrderedOutputError.cannotRestart(name) }
    }

    package var spliceTarget: OutputFile? { nil }

    /// Hands the file's bytes to the descriptor in order as the scheduler's frontier grows, until all
    /// `size` are out; returns their digests (of `algorithms`) and when the last byte came, or
    /// nil if the scheduler stopped first (the digests of what went out are then kept for
    /// ``takeDigestsOfHandedOver()``). Blocks its thread: run it on an executor of its own.
    func drain(scheduler: Scheduler, size: Int64, algorithms: [Digest.Algorithm]) throws -> (
        digests: [Digest.Algorithm: [UInt8]], lastByteAt: ContinuousClock.Instant
    )? {
        let set = DigestSet(algorithms)
        scheduler.setHorizon(Int64(capacity))
        var out: Int64 = 0
        while out < size {
            guard let frontier = scheduler.waitForFrontier(beyond: out) else {
                stoppedDigests = set
                return nil
            }
            while out < frontier {
                let slot = Int(out % Int64(capacity))
                let count = Int(min(frontier - out, Int64(capacity - slot)))
                let bytes = UnsafeRawBufferPointer(start: ring.baseAddress! + slot, count: count)
                try hand(bytes)
                set.update(bytes)
                out += Int64(count)
                handedOver.store(out, ordering: .releasing)
                scheduler.recordHashed(out)
                scheduler.setHorizon(out + Int64(capacity))
            }
        }
        return (set.finalize(), .now)
    }

    /// The digests, not finalized, of the ``bytesHandedOver`` bytes a drain that was stopped handed
    /// over: a stream that goes on from there continues them. Nil unless a drain was stopped.
    func takeDigestsOfHandedOver() -> DigestSet? {
        defer { stoppedDigests = nil }
        return stoppedDigests
    }

    /// Writes all of `bytes` to the descriptor, counting the time it takes as a wait for the reader.
    private func hand(_ bytes: UnsafeRawBufferPointer) throws {
        try wait.timing { try DescriptorWriter.writeAll(bytes, to: descriptor, name: name) }
    }
}

/// The output of a stream without ranges that takes bytes only in order: they arrive in order, so they
/// go straight to the descriptor.
package final class SequentialOutput: ByteDestination, Sendable {
    let descriptor: Int32
    let name: String
    private let written = Atomic<Int64>(0)
    /// Where the time spent handing bytes to the descriptor (waiting for its reader) is counted.
    let wait: WaitClock

    /// An output whose first `handedOver` bytes went to the descriptor already (from a ring whose
    /// download then came as a stream).
    init(descriptor: Int32, name: String, wait: WaitClock = WaitClock(), handedOver: Int64 = 0) {
        self.descriptor = descriptor
        self.name = name
        self.wait = wait
        written.store(handedOver, ordering: .relaxed)
    }

    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        precondition(offset == written.load(ordering: .relaxed), "a stream arrives in order")
        try wait.timing { try DescriptorWriter.writeAll(bytes, to: descriptor, name: name) }
        written.add(Int64(bytes.count), ordering: .relaxed)
    }

    package func restart() throws {
        guard written.load(ordering: .relaxed) == 0 else { throw OrderedOutputError.cannotRestart(name) }
    }

    package var spliceTarget: OutputFile? { nil }
}

/// Why an ordered output failed.
package enum OrderedOutputError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The reader went away (the pipe closed).
    case readerGone(String)
    /// Writing failed with this errno.
    case write(String, errno: Int32)
    /// A stream cannot start over once bytes reached the reader.
    case cannotRestart(String)

    package var description: String {
        switch self {
        case .readerGone(let name): return "the reader of \(name) went away"
        case .write(let name, let code):
            return "writing to \(name) failed: \(String(cString: strerror(code)))"
        case .cannotRestart(let name):
            return "the download would have to start over, but its first bytes already went to \(name)"
        }
    }
}

/// `write(2)` of whole buffers to a descriptor that may be a pipe, without dying of SIGPIPE: the
/// signal is blocked on the calling thread and a pending one taken back, so a reader that goes away is
/// an error of the download, not the end of the process.
package enum DescriptorWriter {
    static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32, name: String) throws {
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        var done = 0
        while done < bytes.count {
            let count = Glibc.write(descriptor, bytes.baseAddress! + done, bytes.count - done)
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                if code == EPIPE {
                    // Take back the SIGPIPE this thread raised, so that unblocking it kills nothing.
                    var none = timespec(tv_sec: 0, tv_nsec: 0)
                    _ = sigtimedwait(&blocked, nil, &none)
                    throw OrderedOutputError.readerGone(name)
                }
                throw OrderedOutputError.write(name, errno: code)
            }
            done += count
        }
    }
}
