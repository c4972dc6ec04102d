#if canImport(Glibc)
    import Glibc
#endif

/// One accepted connection, served on its own thread with blocking I/O: read a request head, answer it,
/// repeat while the connection is kept alive.
final class Connection {
    /// What happens to the connection after a response.
    private enum Outcome {
        case keepAlive
        /// Close politely (TLS close_notify).
        case close
        /// Close at once: a dropped or stalled response, or a broken socket.
        case abort
    }

    /// Room before a body slice for a chunk-size line, so a chunk goes out in one write.
    private static let headroom = 16
    private static let sliceCapacity = 256 * 1024
    private static let maxHeadBytes = 64 * 1024

    private let core: ServerCore
    private let socket: Int32
    private let index: Int
    private let peer: String
    private var stream: (any ConnectionStream)?
    private let inbox: UnsafeMutableRawBufferPointer
    private var inboxCount = 0
    private let outbox: UnsafeMutableRawBufferPointer
    private var bucket: TokenBucket?
    private var counted = false

    init(core: ServerCore, socket: Int32, index: Int, peer: String) {
        self.core = core
        self.socket = socket
        self.index = index
        self.peer = peer
        inbox = .allocate(byteCount: Self.maxHeadBytes, alignment: 16)
        outbox = .allocate(byteCount: Self.headroom + Self.sliceCapacity + 2, alignment: 16)
    }

    deinit {
        inbox.deallocate()
        outbox.deallocate()
    }

    /// Serves requests until the client leaves, a response closes the connection, or the server stops.
    func run() {
        if let tls = core.tls {
            if core.handshakeDelayNanoseconds > 0 && !core.pause(nanoseconds: core.handshakeDelayNanoseconds)
            {
                return
            }
            guard let secure = tls.accept(socket: socket) else {
                // A lingering close, as servers do: the client reads the alert that says why (a
                // client certificate required) before the connection goes, instead of a reset.
                shutdown(socket, Int32(SHUT_WR))
                core.holdOpen(socket: socket)
                return
            }
            stream = secure
        } else {
            stream = PlainStream(socket: socket)
        }
        while let request = nextRequest() {
            switch handle(request) {
            case .keepAlive:
                continue
            case .close:
                stream?.finish()
                return
            case .abort:
                return
            }
        }
    }

    // MARK: Requests

    /// Reads the next request head (and discards any request body); nil when the connection is over.
    private func nextRequest() -> RequestHead? {
        guard let stream else { return nil }
        while true {
            let progress: RequestParser.Progress
            do {
                progress = try RequestParser.parse(
                    UnsafeRawBufferPointer(rebasing: inbox[..<inboxCount]), maxHeadBytes: Self.maxHeadBytes)
            } catch {
                switch error {
                case .tooLarge:
                    sendError(Response.text(431, "request head too large\n"))
                case .malformed(let reason):
                    sendError(Response.text(400, "malformed request: \(reason)\n"))
                }
                return nil
            }
            switch progress {
            case .complete(let head, let consumed):
                consume(consumed)
                if head.header("Transfer-Encoding") != nil {
                    sendError(Response.text(501, "request bodies with Transfer-Encoding are not supported\n"))
                    return nil
                }
                if let lengthText = head.header("Content-Length") {
                    guard let length = Int64(lengthText), length >= 0, discardBody(length) else {
                        sendError(Response.text(400, "bad Content-Length\n"))
                        return nil
                    }
                }
                return head
            case .needMore:
                guard inboxCount < inbox.count else { return nil }
                let count = stream.read(into: UnsafeMutableRawBufferPointer(rebasing: inbox[inboxCount...]))
                guard count > 0 else { return nil }
                inboxCount += count
            }
        }
    }

    /// Drops the first `count` bytes of the inbox.
    private func consume(_ count: Int) {
        let remaining = inboxCount - count
        if remaining > 0 {
            inbox.baseAddress!.copyMemory(from: inbox.baseAddress! + count, byteCount: remaining)
        }
        inboxCount = remaining
    }

    /// Reads and forgets a request body of `length` bytes; false if the connection ends first.
    private func discardBody(_ length: Int64) -> Bool {
        guard let stream else { return false }
        var left = length
        let buffered = Int(min(Int64(inboxCount), left))
        consume(buffered)
        left -= Int64(buffered)
        while left > 0 {
            let space = UnsafeMutableRawBufferPointer(rebasing: inbox[..<Int(min(left, Int64(inbox.count)))])
            let count = stream.read(into: space)
            guard count > 0 else { return false }
            left -= Int64(count)
        }
        return true
    }

    // MARK: Responses

    private func handle(_ request: RequestHead) -> Outcome {
        if request.path == "/__stats" && (request.method == "GET" || request.method == "HEAD") {
            return send(
                Response.text(200, core.stats.json + "\n", contentType: "application/json"), for: request)
        }
        core.countRequest(newConnection: !counted)
        counted = true
        let response = Router(core: core).response(for: request, connectionIndex: index)
        if response.ttfbNanoseconds > 0 && !core.pause(nanoseconds: response.ttfbNanoseconds) {
            return .abort
        }
        return send(response, for: request)
    }

    /// Writes `response` (head, then body unless HEAD) and returns what to do with the connection.
    private func send(_ response: Response, for request: RequestHead) -> Outcome {
        guard let stream else { return .abort }
        let closing = response.close || !request.wantsKeepAlive || core.isStopped
        let sendsBody: Bool
        switch response.body {
        case .empty: sendsBody = false
        case .text(let bytes): sendsBody = request.method != "HEAD" && !bytes.isEmpty
        case .content: sendsBody = request.method != "HEAD"
        }
        let head = headBytes(
            response, closing: closing, keepAliveHeader: !closing && request.versionMinor == 0)
        let headWritten = head.withUnsafeBytes { stream.write($0, more: sendsBody) }
        guard headWritten == head.count else { return .abort }

        var sent: Int64 = 0
        var outcome: Outcome = closing ? .close : .keepAlive
        var note = ""
        if sendsBody {
            switch response.body {
            case .empty:
                break
            case .text(let bytes):
                guard bytes.withUnsafeBytes({ stream.write($0, more: false) }) == bytes.count else {
                    return .abort
                }
            case .content(let source, let range):
                if let prefix = response.framing?.prefix,
                    prefix.withUnsafeBytes({ stream.write($0, more: true) }) != prefix.count
                {
                    return .abort
                }
                let result = sendContent(source, range: range, response: response)
                if result.complete, response.cut == nil, let suffix = response.framing?.suffix,
                    suffix.withUnsafeBytes({ stream.write($0, more: false) }) != suffix.count
                {
                    return .abort
                }
                sent = result.sent
                if !result.complete {
                    outcome = .abort
                    note = " (broken after \(sent) bytes)"
                } else if case .drop(let after)? = response.cut {
                    outcome = .abort
                    note = " (dropped after \(after) bytes)"
                } else if case .stall(let after)? = response.cut {
                    log(request, response, sent: sent, note: " (stalled after \(after) bytes)")
                    core.holdOpen(socket: socket)
                    return .abort
                } else if response.chunked {
                    let last = Array("0\r\n\r\n".utf8)
                    guard last.withUnsafeBytes({ stream.write($0, more: false) }) == last.count else {
                        return .abort
                    }
                }
            }
        }
        log(request, response, sent: sent, note: note)
        return outcome == .keepAlive && response.quietClose ? .close : outcome
    }

    /// Sends a response to a request that could not be parsed, then the connection closes.
    private func sendError(_ response: Response) {
        let head = headBytes(response, closing: true, keepAliveHeader: false)
        guard let stream, head.withUnsafeBytes({ stream.write($0, more: true) }) == head.count else { return }
        if case .text(let bytes) = response.body {
            _ = bytes.withUnsafeBytes { stream.write($0, more: false) }
        }
        stream.finish()
    }

    private func headBytes(_ response: Response, closing: Bool, keepAliveHeader: Bool) -> [UInt8] {
        var text =
            "HTTP/1.1 \(response.status) \(Response.reason(response.status))\r\nServer: FastpullFixtures\r\n"
        for (name, value) in response.headers {
            text += "\(name): \(value)\r\n"
        }
        if closing {
            text += "Connection: close\r\n"
        } else if keepAliveHeader {
            text += "Connection: keep-alive\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// Sends `range` of `source` in slices: fill, corrupt, wait for the rate limits, write (framed as a
    /// chunk when chunked), count. Stops early at the response's cut. Returns the content bytes sent and
    /// whether every intended byte went out.
    private func sendContent(_ source: ContentSource, range: Range<Int64>, response: Response)
        -> (sent: Int64, complete: Bool)
    {
        guard let stream else { return (0, false) }
        var end = range.upperBound
        switch response.cut {
        case .drop(let after)?, .stall(let after)?: end = min(end, range.lowerBound + after)
        case nil: break
        }
        var slice = Self.sliceCapacity
        if let rate = response.rate {
            if bucket?.bytesPerSecond != rate { bucket = TokenBucket(bytesPerSecond: rate) }
            slice = min(slice, TokenBucket.sliceSize(forRate: rate))
        }
        if let total = core.totalBucket { slice = min(slice, total.sliceSize) }

        // An answer that misframes itself once the next request is in looks for it every 16 KiB.
        var fault = response.chunked ? nil : response.pipelineFault
        if fault != nil { slice = min(slice, 16 << 10) }
        var position = range.lowerBound
        var sent: Int64 = 0
        while position < end {
            if let misframe = fault, inboxCount > 0 || Syscalls.hasBytesWaiting(socket) {
                fault = nil
                switch misframe {
                case .cut(let short): end = min(end, max(position, range.upperBound - short))
                case .long(let extra): end += extra
                }
            }
            guard position < end else { break }
            let count = Int(min(Int64(slice), end - position))
            let payload = UnsafeMutableRawBufferPointer(
                rebasing: outbox[Self.headroom..<(Self.headroom + count)])
            if position >= range.upperBound {
                // Past the answer's length: the content that follows, or zeros past the content's end.
                if !source.fill(payload, offset: position) {
                    payload.initializeMemory(as: UInt8.self, repeating: 0)
                }
            } else {
                guard source.fill(payload, offset: position) else { return (sent, false) }
            }
            if let corrupt = response.corruptOffset, corrupt >= position, corrupt < position + Int64(count) {
                payload[Int(corrupt - position)] ^= 0xFF
            }
            let now = Syscalls.monotonicNanoseconds()
            var wait: Int64 = 0
            if response.rate != nil { wait = bucket?.reserve(count, now: now) ?? 0 }
            if let total = core.totalBucket { wait = max(wait, total.reserve(count, now: now)) }
            guard core.pause(nanoseconds: wait) else {
                core.totalBucket?.refund(count)
                return (sent, false)
            }

            var start = Self.headroom
            var stop = Self.headroom + count
            if response.chunked {
                let sizeLine = Array((String(count, radix: 16) + "\r\n").utf8)
                start -= sizeLine.count
                sizeLine.withUnsafeBytes {
                    outbox.baseAddress!.advanced(by: start).copyMemory(
                        from: $0.baseAddress!, byteCount: $0.count)
                }
                outbox[stop] = UInt8(ascii: "\r")
                outbox[stop + 1] = UInt8(ascii: "\n")
                stop += 2
            }
            let written = stream.write(UnsafeRawBufferPointer(rebasing: outbox[start..<stop]), more: false)
            let payloadWritten = max(0, min(count, written - (Self.headroom - start)))
            core.countBodyBytes(payloadWritten)
            sent += Int64(payloadWritten)
            guard written == stop - start else {
                // The peer is gone: what the server's cap reserved for the rest is not spent.
                core.totalBucket?.refund(count - payloadWritten)
                return (sent, false)
            }
            position += Int64(count)
        }
        return (sent, true)
    }

    private func log(_ request: RequestHead, _ response: Response, sent: Int64, note: String) {
        guard let requestLog = core.requestLog else { return }
        let outcome = "\(response.status), \(sent) content bytes\(note)"
        requestLog("\(peer) #\(index) \(request.method) \(request.target) -> \(outcome)")
    }
}
