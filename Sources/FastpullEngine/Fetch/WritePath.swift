import FastpullNet
import Glibc

/// How the bytes of a file fetched in segments reach it, per connection: received straight into a
/// shared mapping of the file (``WritableMapping``), spliced from the socket (``SplicePipe``), or
/// copied through the connection's buffer with `pwrite`.
///
/// The model: `splice` and `pwrite` write under the file's inode lock, one connection at a time, so
/// however many connections deliver, the file is written by one core; `splice` also saves the copy
/// out of the socket into memory. A mapping takes no lock, so every connection writes at once, but
/// each page is faulted in and zeroed before it is written: measured on this project's 2-core
/// machine (1 GiB from nginx on loopback into tmpfs), a mapping cost 1.1 s of kernel time spread over
/// both cores (0.70 s) where `splice` cost 0.54 s on one (0.54 s), and over TLS a mapping took
/// 1.23–1.37 s where `pwrite` took 1.07–1.16 s. So a mapping wins once more than ``splicingCores`` cores can share its
/// work, and loses below: the policy is a mapping on a machine with more cores than that, and
/// `splice` (plain HTTP) or `pwrite` (TLS) on one with as many or fewer.
///
/// A file that cannot be mapped (an output taken in order, a file shorter than the plan, a file
/// system that refuses) is spliced or copied. `FASTPULL_WRITE_PATH=mapped|splice|copy` forces one,
/// for measurements.
package struct WritePath: Sendable {
    /// The mapping of the file that connections receive into, when they do.
    let mapping: WritableMapping?
    /// Whether nothing is mapped or spliced: every byte goes through memory and `pwrite`.
    let copiesOnly: Bool

    /// Up to this many cores, connections splice or copy: a mapping's doubled kernel work (zeroing,
    /// then the copy) pays only when more cores share it.
    static let splicingCores = 2

    /// What a measurement forced, if anything.
    enum Forced: String { case mapped, splice, copy }

    /// The write path for a file of `size` bytes behind `file` (nil: an output that is no file), on a
    /// machine with `cores` cores.
    init(file: OutputFile?, size: Int64, cores: Int, forced: Forced? = Self.forcedByEnvironment) {
        copiesOnly = forced == .copy
        let maps = forced.map { $0 == .mapped } ?? (cores > Self.splicingCores)
        mapping = maps ? file?.mapForWriting(size: size) : nil
    }

    /// No mapping; splicing where the transport allows.
    static let none = WritePath(file: nil, size: 0, cores: 1, forced: nil)

    static var forcedByEnvironment: Forced? {
        getenv("FASTPULL_WRITE_PATH").flatMap { Forced(rawValue: String(cString: $0)) }
    }
}

extension SegmentFetcher {
    /// The least a connection receiving into a mapping claims at once (its rate is not measured yet,
    /// or is slow): one populate call and one look at the scheduler per 64 KiB at most.
    static let leastMappedClaim: Int64 = 64 << 10

    /// Reads what `transport` has (at most `limit` bytes) through a buffer of its own and hands it to
    /// `take`; returns how many, 0 at end of stream.
    static func readThroughMemory(
        from transport: any Transport, upTo limit: Int64, into take: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Int {
        let buffer = UnsafeMutableRawBufferPointer.allocate(
            byteCount: Int(min(limit, 64 << 10)), alignment: 16)
        defer { buffer.deallocate() }
        let count = try transport.read(into: buffer)
        if count > 0 { try take(UnsafeRawBufferPointer(rebasing: buffer[0..<count])) }
        return count
    }
}
