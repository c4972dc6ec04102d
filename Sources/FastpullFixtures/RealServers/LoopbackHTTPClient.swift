import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A minimal HTTP/1.1 client for 127.0.0.1, enough to set up what the tests download (S3 buckets and
/// objects): one request per connection (`Connection: close`), the response read to the end.
///
/// Its socket calls block, so ``send(_:)`` runs them on a thread of its own and never holds a thread of
/// Swift's cooperative pool.
public struct LoopbackHTTPClient: Sendable {
    /// A request to send.
    public struct Request: Sendable {
        /// `GET`, `POST`, `PUT`, …
        public var method: String
        /// The request target: path and query, already encoded.
        public var target: String
        /// Header fields besides `Host`, `Content-Length` and `Connection`.
        public var headers: [(String, String)] = []
        /// The body sent.
        public var body = Data()

        /// A request of `method` for `target`, with `body`.
        public init(method: String, target: String, headers: [(String, String)] = [], body: Data = Data()) {
            self.method = method
            self.target = target
            self.headers = headers
            self.body = body
        }
    }

    /// What the server answered.
    public struct Response: Sendable {
        /// The status code.
        public var status: Int
        /// The header fields, in order.
        public var headers: [(String, String)]
        /// The body, whole.
        public var body: Data

        /// The first header called `name` (any case).
        public func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }

        /// The body as text.
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// The server's port on 127.0.0.1.
    public var port: Int

    /// A client of the server on 127.0.0.1 at `port`.
    public init(port: Int) {
        self.port = port
    }

    /// Sends `request` and returns the whole response. A request whose connection fails before an
    /// answer (a loaded server that resets a large upload) is sent again, up to three times in all:
    /// every request the tests send is safe to repeat.
    public func send(_ request: Request) async throws -> Response {
        let port = port
        let result: Result<Response, RealServerError> = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(
                    returning: Result { () throws(RealServerError) in
                        var attempt = 1
                        while true {
                            do throws(RealServerError) {
                                return try Self.exchange(request, port: port)
                            } catch  where attempt < 3 {
                                attempt += 1
                                usleep(200_000)
                            }
                        }
                    })
            }
            thread.name = "http \(request.method) \(request.target)"
            thread.start()
        }
        return try result.get()
    }

    private static func exchange(_ request: Request, port: Int) throws(RealServerError) -> Response {
        let what = "\(request.method) http://127.0.0.1:\(port)\(request.target)"
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw RealServerError("\(what): socket: \(errorText())") }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = LoopbackPort.loopbackAddress(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw RealServerError("\(what): connect: \(errorText())") }

        var head = "\(request.method) \(request.target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        for (name, value) in request.headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(request.body.count)\r\nConnection: close\r\n\r\n"
        try sendAll(descriptor, Data(head.utf8), what: what)
        try sendAll(descriptor, request.body, what: what)

        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 {
                if errno == EINTR { continue }
                throw RealServerError("\(what): recv: \(errorText())")
            }
            if count == 0 { break }
            received.append(contentsOf: buffer[0..<count])
        }
        return try parse(received, what: what)
    }

    private static func sendAll(_ descriptor: Int32, _ data: Data, what: String) throws(RealServerError) {
        var failure: Int32 = 0
        data.withUnsafeBytes { bytes in
            var sent = 0
            while sent < bytes.count {
                let count = Glibc.send(
                    descriptor, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
                if count < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                sent += count
            }
        }
        if failure != 0 { throw RealServerError("\(what): send: \(errorText(failure))") }
    }

    private static func parse(_ data: Data, what: String) throws(RealServerError) -> Response {
        let separator = Data("\r\n\r\n".utf8)
        guard let end = data.range(of: separator) else {
            throw RealServerError("\(what): the response has no complete head (\(data.count) bytes)")
        }
        let lines = String(decoding: data[data.startIndex..<end.lowerBound], as: UTF8.self)
            .components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw RealServerError("\(what): bad status line \(lines[0])")
        }
        let headers = lines.dropFirst().compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (
                String(line[..<colon]),
                line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            )
        }
        var body = Data(data[end.upperBound...])
        let response = Response(status: status, headers: headers, body: body)
        if let length = response.header("Content-Length").flatMap(Int.init), length < body.count {
            body = body.prefix(length)
        }
        return Response(status: status, headers: headers, body: body)
    }

    private static func errorText(_ code: Int32 = errno) -> String {
        String(cString: strerror(code))
    }
}
