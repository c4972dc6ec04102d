import FastpullNet

/// A `CONNECT` tunnel through an HTTP proxy (RFC 9110 §9.3.6), with TLS to the origin inside it.
package enum ProxyTunnel {
    /// The largest `CONNECT` answer accepted.
    package static let maximumHeadBytes = 16 * 1024

    /// Connects to `proxy`, sends `request` (the `CONNECT`), and once the proxy answers 2xx performs
    /// the TLS handshake with `origin` over the tunnel. Blocks the calling thread.
    ///
    /// Errors: `NetError` for the connection to the proxy and the handshake; a proxy that refuses the
    /// tunnel gives ``TransferError/status(_:reason:retryAfter:)`` with its status (a 407 when it wants
    /// credentials), the reason naming the proxy; a malformed answer an `HTTPParseError`.
    package static func open(
        _ request: RequestHead, to origin: Origin, through proxy: Proxy, tls: TLSContext, timeouts: Timeouts,
        addressing: Addressing = .standard
    ) throws -> any Transport {
        let socket = try Connector.connectSocket(
            host: proxy.host, port: proxy.port, timeouts: timeouts, addressing: addressing)
        do {
            try establish(request, on: socket, to: origin, through: proxy)
            return try Connector.startTLS(on: socket, host: origin.host, tls: tls, timeouts: timeouts)
        } catch {
            socket.close()
            throw error
        }
    }

    /// Sends the `CONNECT` and reads the proxy's answer, skipping interim 1xx answers. Succeeds on 2xx
    /// with nothing after the head (the client speaks first in TLS, so anything more is an error).
    package static func establish(
        _ request: RequestHead, on transport: any Transport, to origin: Origin, through proxy: Proxy
    ) throws {
        let bytes = request.serialized()
        try bytes.withUnsafeBytes { try transport.write($0) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: maximumHeadBytes, alignment: 1)
        defer { buffer.deallocate() }
        var parser = ResponseHeadParser(maxHeadBytes: maximumHeadBytes)
        var start = 0
        var end = 0
        while true {
            if start == end {
                start = 0
                end = try transport.read(into: buffer)
                guard end > 0 else {
                    throw NetError.reset(
                        "the proxy \(proxy) closed the connection before answering CONNECT \(request.target)")
                }
            }
            switch try parser.feed(UnsafeRawBufferPointer(rebasing: buffer[start..<end])) {
            case .needMore:
                start = end
            case .complete(let head, let consumed):
                start += consumed
                if (100..<200).contains(head.status) {
                    parser = ResponseHeadParser(maxHeadBytes: maximumHeadBytes)
                    continue
                }
                guard (200..<300).contains(head.status) else {
                    let retryAfter = head.headers["Retry-After"].flatMap { RetryAfter.parse($0) }
                    let reason = head.reason.isEmpty ? "" : head.reason + " "
                    throw TransferError.status(
                        head.status,
                        reason: "\(reason)(the proxy \(proxy) refused to open a tunnel to \(request.target))",
                        retryAfter: retryAfter)
                }
                guard start == end else {
                    throw NetError.tlsHandshake(
                        "the proxy \(proxy) sent data after accepting CONNECT \(request.target), before TLS began"
                    )
                }
                return
            }
        }
    }
}
