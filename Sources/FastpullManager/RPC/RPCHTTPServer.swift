import FastpullNet
import Glibc
import Synchronization

/// A small HTTP/1.1 server for the RPC interface: a listening socket, and a thread per connection
/// (never Swift's cooperative pool) that reads each request (a head of at most 64 KiB, a body of at
/// most ``largestBody``), hands it to `handle` and writes the answer, keeping the connection alive as
/// the client asks. When every place is taken, a new connection takes the place of the one idle
/// longest (``RPCConnectionSlots``), so connections that send nothing lock no one out.
final class RPCHTTPServer: Sendable {
    /// A request: method, target and body.
    struct Request: Sendable {
        var method: String
        var target: String
        var headers: [String: String]
        var body: [UInt8]
    }

    /// An answer: status, extra fields, body.
    struct Response: Sendable {
        var status: Int
        var reason: String
        var headers: [(String, String)]
        var body: [UInt8]
        /// How long the answer waits before it is written (a refused secret).
        var delay: Duration? = nil
        /// Run once the answer is written (a shutdown the answer announces).
        var afterwards: (@Sendable () -> Void)? = nil
        /// For `101 Switching Protocols`: serves the connection from then on, given its socket, the
        /// bytes read past the request, and what to call each time its client is heard from; the
        /// socket is closed when it returns.
        var upgrade: (@Sendable (Int32, [UInt8], _ heard: () -> Void) -> Void)? = nil
    }

    /// The largest request body read (aria2's own limit is 2 MiB).
    static let largestBody = 2 << 20
    private static let largestHead = 64 << 10

    private let listener: Int32
    /// The port it listens on.
    let port: Int
    /// The connections served now, and which gives its place up to a new one (``RPCConnectionSlots``).
    let slots = RPCConnectionSlots(capacity: mostConnections)
    /// The most connections served at once (a thread each).
    static let mostConnections = 64
    /// How long a connection may stay silent (between requests, or within one) before it is closed.
    static let idleSeconds = 60
    /// How long a request may take from its first byte to its last.
    static let requestSeconds = 60
    private let handle: @Sendable (Request) -> Response

    /// Listens on `address` (`127.0.0.1`, or `0.0.0.0` for every interface) at `port` (0: a free
    /// one) and starts accepting.
    init(address: String = "127.0.0.1", port: Int, handle: @escaping @Sendable (Request) -> Response) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw NetError.system(call: "socket", errno: errno) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, address, &addr.sin_addr)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            let code = errno
            close(fd)
            throw NetError.system(call: "bind \(address):\(port)", errno: code)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        self.port = Int(UInt16(bigEndian: addr.sin_port))
        self.handle = handle
        OSThread.detach { [self] in acceptLoop() }
    }

    /// Stops accepting (connections under way finish their request).
    func stop() {
        Glibc.shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit { close(listener) }

    /// Accepts until ``stop()``: a failure to accept for want of descriptors or memory is waited out
    /// (the RPC must outlive a moment when the transfers hold every descriptor), not fatal.
    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                switch errno {
                case EINTR, ECONNABORTED, EPROTO: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    usleep(50_000)
                    continue
                default: return
                }
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            guard slots.admit(client) else {
                close(client)
                continue
            }
            var timeout = timeval(tv_sec: Self.idleSeconds, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            OSThread.detach { [self] in serve(client) }
        }
    }

    /// Serves requests on `fd` until the client closes it, asks to, or sends something malformed.
    private func serve(_ fd: Int32) {
        defer { slots.release(fd) }
        var buffer: [UInt8] = []
        while true {
            let request: Request
            switch Self.readRequest(fd, buffered: buffer) {
            case .request(let read, let rest):
                request = read
                buffer = rest
            case .tooLarge(let status):
                // Said, then closed: the rest of what was sent is not read.
                _ = Self.writeAll(
                    fd, Array("HTTP/1.1 \(status)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
                return
            case .ended: return
            }
            guard slots.busy(fd) else { return }
            let response = handle(request)
            if let delay = response.delay { Self.sleep(delay) }
            let closing = request.headers["connection"]?.lowercased() == "close"
            var head = "HTTP/1.1 \(response.status) \(response.reason)\r\n"
            // A 1xx answer has no body, and no length (RFC 9110 §8.6).
            if response.status >= 200 { head += "Content-Length: \(response.body.count)\r\n" }
            for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
            if closing, response.upgrade == nil { head += "Connection: close\r\n" }
            head += "\r\n"
            let written = Self.writeAll(fd, Array(head.utf8) + response.body)
            response.afterwards?()
            if let upgrade = response.upgrade {
                slots.webSocket(fd)
                // Its place is ordered by when the client was last heard from, not by when it
                // opened: a front-end's live socket outlasts one left open and silent.
                if written { upgrade(fd, buffer, { slots.webSocket(fd) }) }
                return
            }
            guard written, !closing else { return }
            // Waiting for the next request from now (the first one, since it was admitted).
            slots.waiting(fd)
        }
    }

    /// What reading a request gave.
    private enum Read {
        /// A request, and the bytes read past it.
        case request(Request, [UInt8])
        /// A head or body over the limits: answered with `status`, then closed.
        case tooLarge(String)
        /// The end of the stream, or something malformed.
        case ended
    }

    /// Reads one request (after `buffered` bytes already read).
    private static func readRequest(_ fd: Int32, buffered: [UInt8]) -> Read {
        var bytes = buffered
        var headEnd: Int?
        var searched = 0
        // Once a request has begun, it must be whole within ``requestSeconds``: a client that sends
        // a byte now and then cannot hold its connection (and its thread) for ever.
        var deadline: ContinuousClock.Instant? = bytes.isEmpty ? nil : .now + .seconds(requestSeconds)
        while true {
            if let end = find([13, 10, 13, 10], in: bytes, from: max(searched - 3, 0)) {
                headEnd = end
                break
            }
            searched = bytes.count
            guard bytes.count < largestHead else { return .tooLarge("431 Request Header Fields Too Large") }
            guard read(fd, into: &bytes) else { return .ended }
            deadline = deadline ?? .now + .seconds(requestSeconds)
            if let deadline, ContinuousClock.now > deadline { return .ended }
        }
        guard let headEnd else { return .ended }
        let lines = String(decoding: bytes[..<headEnd], as: UTF8.self).split(separator: "\r\n")
        let parts = lines.first?.split(separator: " ") ?? []
        guard parts.count == 3 else { return .ended }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { return .ended }
            let value = line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
            headers[line[..<colon].lowercased()] = String(
                value.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
        }
        // A body in chunks is not read (no front-end sends one): refused as too large to read.
        if headers["transfer-encoding"] != nil { return .tooLarge("411 Length Required") }
        let length = Int(headers["content-length"] ?? "0") ?? -1
        guard length >= 0 else { return .ended }
        guard length <= largestBody else { return .tooLarge("413 Content Too Large") }
        let bodyStart = headEnd + 4
        while bytes.count < bodyStart + length {
            guard read(fd, into: &bytes) else { return .ended }
            if let deadline, ContinuousClock.now > deadline { return .ended }
        }
        let request = Request(
            method: String(parts[0]), target: String(parts[1]), headers: headers,
            body: Array(bytes[bodyStart..<bodyStart + length]))
        return .request(request, Array(bytes[(bodyStart + length)...]))
    }

    /// Appends what the socket has; false at end of stream or on an error.
    private static func read(_ fd: Int32, into bytes: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        let count = chunk.withUnsafeMutableBytes { buffer in
            SystemCall.restarting { recv(fd, buffer.baseAddress, buffer.count, 0) }
        }
        guard count > 0 else { return false }
        bytes += chunk[..<count]
        return true
    }

    /// Sleeps on this connection's thread (never the cooperative pool).
    static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { buffer in
                SystemCall.restarting {
                    send(fd, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
                }
            }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    /// Where `needle` first starts in `haystack`, looking from `from` on.
    static func find(_ needle: [UInt8], in haystack: [UInt8], from: Int = 0) -> Int? {
        guard haystack.count >= needle.count, from <= haystack.count - needle.count else { return nil }
        next: for start in from...(haystack.count - needle.count) {
            for offset in needle.indices where haystack[start + offset] != needle[offset] { continue next }
            return start
        }
        return nil
    }
}
