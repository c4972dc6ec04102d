#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where the bytes of a resource body come from.
enum ContentSource {
    /// ``FixtureContent`` for a seed.
    case generated(seed: UInt64)
    /// A file in the server's files directory.
    case file(OpenFile)

    /// Fills `buffer` with the resource bytes at `offset`; false if a file could not be read.
    func fill(_ buffer: UnsafeMutableRawBufferPointer, offset: Int64) -> Bool {
        switch self {
        case .generated(let seed):
            FixtureContent.fill(buffer, offset: offset, seed: seed)
            return true
        case .file(let file):
            return Syscalls.readFully(file.descriptor, into: buffer, at: offset)
        }
    }
}

/// An open file descriptor, closed when the last response using it is gone.
final class OpenFile {
    let descriptor: Int32

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }
}

/// A response the router decided on, for the connection to send.
struct Response {
    enum Body {
        /// No body (also the case for HEAD; the head still carries the GET's length headers).
        case empty
        /// A small fixed body (errors, redirects, injected statuses, `/__stats`).
        case text([UInt8])
        /// Resource content: `range` of `source`, with the faults of the request applied.
        case content(ContentSource, range: Range<Int64>)
    }

    /// How a content body is cut short.
    enum Cut: Equatable {
        /// Close the connection after this many body bytes.
        case drop(after: Int64)
        /// Stop sending after this many body bytes and keep the connection open until the server stops
        /// or the client leaves.
        case stall(after: Int64)
    }

    var status: Int
    /// Every header except `Connection` and `Server`, which the connection adds.
    var headers: [(name: String, value: String)]
    var body: Body = .empty
    /// Content bodies only: send with chunked transfer coding.
    var chunked = false
    var cut: Cut?
    /// The resource offset whose byte is flipped in bodies that include it.
    var corruptOffset: Int64?
    /// Per-connection limit for this body, in bytes per second.
    var rate: Int?
    var ttfbNanoseconds: Int64 = 0
    /// Close the connection after this response (`close=1`).
    var close = false
    /// Close the connection after this response without saying so (`quiet-close=1`).
    var quietClose = false
    /// Content bodies only: how the answer misframes itself once the connection's next request has
    /// arrived (`pipeline-cut=N`, `pipeline-long=N`).
    var pipelineFault: PipelineFault?
    /// Bytes sent before and after a content body (the one part of a `multipart/byteranges` answer).
    var framing: (prefix: [UInt8], suffix: [UInt8])?

    /// A small response with a length (`text/plain` unless `contentType` says otherwise).
    static func text(
        _ status: Int, _ message: String, headers: [(name: String, value: String)] = [],
        contentType: String = "text/plain; charset=utf-8"
    ) -> Response {
        let body = Array(message.utf8)
        let framing = [(name: "Content-Type", value: contentType), ("Content-Length", "\(body.count)")]
        return Response(status: status, headers: headers + framing, body: .text(body))
    }

    /// The reason phrase for `status`.
    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 204: "No Content"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 410: "Gone"
        case 416: "Range Not Satisfiable"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: "Status \(status)"
        }
    }
}

/// An answer that stops short of its length, or runs past it, once the connection's next request has
/// arrived: the bytes of the next answer then stand where the client expects this one's.
enum PipelineFault: Sendable, Equatable {
    /// Stop this many bytes short (at once when fewer are left).
    case cut(Int64)
    /// Send this many bytes of the content that follows past the end.
    case long(Int64)
}
