import FastpullNet
import Synchronization

/// One HTTP/1.1 connection: sends request heads and reads responses through a fixed buffer, streaming
/// body bytes to the caller without copying them. Keep-alive reuse is decided per response.
///
/// A connection is used by one task at a time (handed over through ``ConnectionPool``'s lock), and
/// only `cancel()` is called from elsewhere; that goes to ``Transport/shutdown()``, which is
/// thread-safe.
package final class HTTPConnection: @unchecked Sendable {
    package let origin: Origin
    package let transport: any Transport
    /// The read buffer; bytes `[readIndex, fillIndex)` are received but not yet consumed.
    private let buffer: UnsafeMutableRawBufferPointer
    private var readIndex = 0
    private var fillIndex = 0
    /// False once a response could not be read to its end or asked to close (owner thread only).
    private var reusable = true
    /// Set by `cancel()` from any thread.
    private let cancelled = Atomic<Bool>(false)
    /// False once a response could not be read to its end, asked to close, or the connection was
    /// cancelled.
    package var isReusable: Bool { reusable && !cancelled.load(ordering: .acquiring) }
    /// Requests sent on this connection.
    package private(set) var requestCount = 0
    /// The transport's receive low-water mark as last set (1: every byte wakes a read).
    package private(set) var lowWater = 1

    /// The longest a whole response head may take to arrive, however steadily its bytes trickle in
    /// (a server that sends one byte a second never trips the transport's idle timeout); `nil` for no
    /// limit.
    package let headDeadline: Duration?

    package static let bufferSize = 256 * 1024

    /// How long opening it took (TCP, TLS, a proxy's tunnel).
    package let setupTime: Duration
    /// Called once, when the connection closes (by ``close()`` or when it is freed).
    private let onClose: (@Sendable () -> Void)?
    private let closedOnce = Atomic<Bool>(false)
    /// Its number in the ``ConnectionCache`` that leased it out; nil for one no cache owns.
    package let leaseID: Int?

    package init(
        origin: Origin, transport: any Transport, headDeadline: Duration? = nil,
        bufferSize: Int = HTTPConnection.bufferSize, setupTime: Duration = .zero, leaseID: Int? = nil,
        onClose: (@Sendable () -> Void)? = nil
    ) {
        self.leaseID = leaseID
        self.onClose = onClose
        self.origin = origin
        self.transport = transport
        self.headDeadline = headDeadline
        self.setupTime = setupTime
        self.buffer = .allocate(byteCount: bufferSize, alignment: 4096)
    }

    deinit {
        transport.close()
        closed()
        buffer.deallocate()
    }

    private func closed() {
        if !closedOnce.exchange(true, ordering: .acquiringAndReleasing) { onClose?() }
    }

    /// Whether this idle connection has gone bad since its last response: the server closed it, or
    /// sent bytes nobody asked for (buffered here, or waiting in the socket). Such a connection is
    /// closed instead of reused.
    package var isDeadWhileIdle: Bool {
        readIndex != fillIndex || transport.idleState() != .quiet
    }

    /// Whether a request has been sent on this connection before (it was kept alive).
    package var wasUsed: Bool { requestCount > 0 }

    /// Wakes any blocked read or write; the connection is dead afterwards.
    package func cancel() {
        cancelled.store(true, ordering: .releasing)
        transport.shutdown()
    }

    package func close() {
        reusable = false
        transport.close()
        closed()
    }

    package func send(_ request: RequestHead) throws {
        requestCount += 1
        let bytes = request.serialized()
        do {
            try bytes.withUnsafeBytes { try transport.write($0) }
        } catch {
            reusable = false
            throw error
        }
    }

    /// Reads the next final response head, skipping interim 1xx responses. A failure leaves the
    /// connection unusable: what is left in it is not the start of a response.
    package func readHead() throws -> ResponseHead {
        do {
            return try readHeadOnce()
        } catch {
            reusable = false
            throw error
        }
    }

    private func readHeadOnce() throws -> ResponseHead {
        // A head is a few hundred bytes: any byte must wake the read.
        setLowWater(1)
        let clock = ContinuousClock()
        let deadline = headDeadline.map { clock.now.advanced(by: $0) }
        var receivedAny = readIndex != fillIndex
        while true {
            var parser = ResponseHeadParser()
            let head: ResponseHead
            parsing: while true {
                if readIndex == fillIndex {
                    do {
                        try fill(expectingHead: true)
                    } catch NetError.reset(let reason) where !receivedAny && requestCount > 1 {
                        // A kept-alive connection reset before it answered: the server had closed it.
                        _ = reason
                        throw HTTPBodyError.closedBeforeResponse
                    }
                    receivedAny = true
                    if let deadline, clock.now > deadline {
                        throw NetError.timeout("reading the response head")
                    }
                }
                let available = UnsafeRawBufferPointer(rebasing: buffer[readIndex..<fillIndex])
                switch try parser.feed(available) {
                case .needMore:
                    readIndex = fillIndex
                case .complete(let parsed, let consumed):
                    readIndex += consumed
                    head = parsed
                    break parsing
                }
            }
            if (100..<200).contains(head.status) && head.status != 101 { continue }
            if !head.keepAlive { reusable = false }
            return head
        }
    }

    /// Moves some of the `remaining` bytes of a body from the transport to where they belong without
    /// reading them into memory; returns how many it received, 0 at end of stream.
    package typealias Splice = (_ transport: any Transport, _ remaining: Int64) throws -> Int

    /// Streams the body of `head` (the answer to a request with `method`) to `sink`. Fails with
    /// ``HTTPBodyError`` if the body ends early or is malformed; the connection is then not reusable.
    ///
    /// With `splice` (a reader that takes body bytes straight from the transport: a splice into a file,
    /// which the caller offers only on a transport that can splice, or a receive into a mapping of the
    /// file, on any), the part of a `Content-Length` body that is not buffered yet goes to `splice`
    /// instead of through the buffer to `sink`.
    package func readBody(
        of head: ResponseHead, method: String, splice: Splice? = nil,
        into sink: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        do {
            if method == "HEAD" || head.status == 204 || head.status == 304 {
                return
            }
            // A body in a transfer coding such as gzip is not the file's bytes, and none is decoded here.
            if let coding = head.foreignTransferCodings.first {
                throw HTTPBodyError.unsupportedTransferCoding(coding)
            }
            if head.isChunked {
                try readChunked(into: sink)
            } else if let length = head.contentLength {
                try readExactly(length, splice: splice, into: sink)
            } else {
                reusable = false
                try readUntilClose(into: sink)
            }
        } catch {
            reusable = false
            throw error
        }
    }

    /// Reads and drops a small body so the connection can be reused; gives up on reuse when the body
    /// is larger than `limit` or has no length.
    package func discardBody(of head: ResponseHead, method: String, limit: Int64 = 64 * 1024) {
        if method != "HEAD", head.status != 204, head.status != 304 {
            guard let length = head.contentLength, length <= limit, !head.isChunked else {
                reusable = false
                return
            }
        }
        do { try readBody(of: head, method: method) { _ in } } catch { reusable = false }
    }

    private func readExactly(
        _ length: Int64, splice: Splice? = nil, into sink: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        var remaining = length
        let started = ContinuousClock.now
        while remaining > 0 {
            if readIndex == fillIndex {
                setLowWater(
                    Self.lowWater(
                        remaining: remaining, received: length - remaining,
                        elapsed: ContinuousClock.now - started))
            }
            if readIndex == fillIndex, let splice {
                let received = try splice(transport, remaining)
                guard received > 0 else { throw HTTPBodyError.truncated }
                remaining -= Int64(received)
                continue
            }
            if readIndex == fillIndex { try fill(expectingHead: false) }
            let take = Int(min(Int64(fillIndex - readIndex), remaining))
            let slice = UnsafeRawBufferPointer(rebasing: buffer[readIndex..<readIndex + take])
            readIndex += take
            remaining -= Int64(take)
            try sink(slice)
        }
    }

    private func readChunked(into sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        setLowWater(1)
        var decoder = ChunkedDecoder()
        while true {
            if readIndex == fillIndex { try fill(expectingHead: false) }
            let available = UnsafeRawBufferPointer(rebasing: buffer[readIndex..<fillIndex])
            switch try decoder.decode(available, emit: sink) {
            case .needMore:
                readIndex = fillIndex
            case .finished(let consumed):
                readIndex += consumed
                return
            }
        }
    }

    private func readUntilClose(into sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        setLowWater(1)
        while true {
            if readIndex < fillIndex {
                let slice = UnsafeRawBufferPointer(rebasing: buffer[readIndex..<fillIndex])
                readIndex = fillIndex
                try sink(slice)
            }
            readIndex = 0
            fillIndex = 0
            let count = try transport.read(into: buffer)
            if count == 0 { return }
            fillIndex = count
        }
    }

    /// How many bytes a blocked read of a body waits for before it wakes: about 10 ms of what this
    /// answer has delivered so far, in steps of 16 KiB up to 64 KiB, and never more than is still to
    /// come (the kernel would hold the read until its timeout). At least 16 KiB where those come within
    /// 40 ms (from 410 kB/s): 64 connections sharing a 50 MB/s link each bring less than 16 KiB in
    /// 10 ms, and woke for every packet or two (5.8 CPU-s for 256 MiB in 5.8 s; 4.3 with this). 1
    /// (every byte) until 256 KiB have come (no rate to go by yet) or when 40 ms bring less than
    /// 16 KiB: a slow answer's bytes are written, counted and shown as they come. On a link that
    /// trickles packets (a shared cap, a real network's 1500-byte frames) a connection otherwise woke
    /// for every few of them.
    package static func lowWater(remaining: Int64, received: Int64, elapsed: Duration) -> Int {
        let seconds = elapsed.seconds
        guard received >= 256 << 10, seconds > 0 else { return 1 }
        let step: Int64 = 16 << 10
        let rate = Double(received) / seconds
        let tenMilliseconds = min(Int64(rate / 100), 4 * step)
        let wanted = min(
            tenMilliseconds >= step || rate * 0.04 < Double(step) ? tenMilliseconds : step, remaining)
        return wanted >= step ? Int(wanted / step * step) : 1
    }

    private func setLowWater(_ bytes: Int) {
        guard bytes != lowWater else { return }
        lowWater = bytes
        transport.setReceiveLowWater(bytes)
    }

    /// Reads more bytes into the buffer; end of stream here is an error.
    private func fill(expectingHead: Bool) throws {
        if readIndex == fillIndex {
            readIndex = 0
            fillIndex = 0
        }
        // A head is small: reading only a little for it leaves the body in the socket, where a plain
        // connection can splice it to the file instead of copying it through this buffer.
        let limit =
            expectingHead && transport.canSplice ? min(buffer.count, fillIndex + 16 * 1024) : buffer.count
        let free = UnsafeMutableRawBufferPointer(rebasing: buffer[fillIndex..<limit])
        let count = try transport.read(into: free)
        guard count > 0 else {
            reusable = false
            throw expectingHead && requestCount > 0 && fillIndex == readIndex
                ? HTTPBodyError.closedBeforeResponse : HTTPBodyError.truncated
        }
        fillIndex += count
    }
}

/// A response body that could not be read to its end.
package enum HTTPBodyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server closed the connection before sending a response (often a stale keep-alive connection).
    case closedBeforeResponse
    /// The connection closed before the body's declared end.
    case truncated
    /// The body is in a transfer coding that is not decoded (only `chunked` is).
    case unsupportedTransferCoding(String)

    package var description: String {
        switch self {
        case .closedBeforeResponse: return "the server closed the connection before answering"
        case .truncated: return "the connection closed before the end of the response"
        case .unsupportedTransferCoding(let coding):
            return "the response uses the transfer coding '\(coding)', which fastpull does not decode"
        }
    }
}
