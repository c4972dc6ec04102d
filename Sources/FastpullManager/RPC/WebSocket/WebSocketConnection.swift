import Dispatch
import FastpullNet
import Glibc
import Synchronization

/// A connection upgraded to WebSocket (RFC 6455), served on the thread that accepted it: it reads
/// frames, joins fragments into messages, answers each text message with `answer`, answers pings, and
/// closes as the protocol says. Sends go through a serial queue of its own, so a notification from any
/// thread never waits on this client's socket, and answers and notifications leave in order.
///
/// A silent client is pinged after ``RPCHTTPServer/idleSeconds``; one silent through the next
/// period too is closed.
final class WebSocketConnection: Sendable {
    private let fd: Int32
    private let sends: DispatchQueue
    private let closed = Atomic<Bool>(false)
    /// Bytes queued and not yet written; past ``mostQueued`` the client is not reading, and is closed.
    private let queued = Atomic<Int>(0)
    /// The most bytes waiting for a client that does not read.
    static let mostQueued = 4 << 20

    init(fd: Int32) {
        self.fd = fd
        sends = DispatchQueue(label: "fastpull.websocket.\(fd)")
    }

    /// Sends a text message (an answer or a notification); dropped once the connection is closing.
    func send(text: String) {
        send(WebSocketFrame(final: true, opcode: .text, payload: Array(text.utf8)))
    }

    private func send(_ frame: WebSocketFrame) {
        guard !closed.load(ordering: .relaxed) else { return }
        let bytes = frame.encoded
        guard queued.add(bytes.count, ordering: .relaxed).newValue <= Self.mostQueued else {
            // A client that reads nothing while answers pile up: it is closed, not fed.
            closed.store(true, ordering: .relaxed)
            Glibc.shutdown(fd, Int32(SHUT_RDWR))
            return
        }
        sends.async { [self] in
            defer { queued.subtract(bytes.count, ordering: .relaxed) }
            // Checked here too: once the connection ends, its descriptor may be another's.
            guard !closed.load(ordering: .relaxed) else { return }
            var sent = 0
            while sent < bytes.count {
                let count = bytes.withUnsafeBytes { buffer in
                    SystemCall.restarting {
                        Glibc.send(fd, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
                    }
                }
                guard count > 0 else {
                    closed.store(true, ordering: .relaxed)
                    return
                }
                sent += count
            }
        }
    }

    /// Returns once every send queued so far is written (or dropped).
    func flush() { sends.sync {} }

    /// Serves the connection until it closes; `buffered` holds bytes read past the handshake. Each
    /// whole text message is given to `receive` (which answers through ``send(text:)``); `heard` is
    /// told of every frame the client sends (a pong to the server's ping too). Returns once every send
    /// queued is written (the caller then closes the socket).
    func run(
        buffered: [UInt8], largestMessage: Int, heard: () -> Void = {}, receive handle: (String) -> Void
    ) {
        var bytes = buffered
        var message: (opcode: WebSocketFrame.Opcode, payload: [UInt8])?
        var silentPeriods = 0
        loop: while true {
            let frame: WebSocketFrame?
            do {
                frame = try WebSocketFrame.take(from: &bytes, largest: largestMessage)
            } catch {
                send(.close(error.code, error.reason))
                break loop
            }
            if frame != nil { heard() }
            guard let frame else {
                switch receive(into: &bytes) {
                case .data: silentPeriods = 0
                case .silent:
                    silentPeriods += 1
                    guard silentPeriods < 2 else { break loop }
                    send(WebSocketFrame(final: true, opcode: .ping, payload: []))
                case .ended: break loop
                }
                continue
            }
            switch frame.opcode {
            case .ping: send(WebSocketFrame(final: true, opcode: .pong, payload: frame.payload))
            case .pong: break
            case .close:
                // Echo the status code, as §5.5.1 asks, and end.
                send(WebSocketFrame(final: true, opcode: .close, payload: Array(frame.payload.prefix(2))))
                break loop
            case .text, .binary, .continuation:
                if frame.opcode == .continuation {
                    guard message != nil else {
                        send(.close(1002, "a continuation without a message"))
                        break loop
                    }
                    message?.payload += frame.payload
                } else {
                    guard message == nil else {
                        send(.close(1002, "a new message inside a fragmented one"))
                        break loop
                    }
                    message = (frame.opcode, frame.payload)
                }
                guard let whole = message, (message?.payload.count ?? 0) <= largestMessage else {
                    send(.close(1009, "message too big"))
                    break loop
                }
                guard frame.final else { continue }
                message = nil
                guard whole.opcode == .text else {
                    send(.close(1003, "only text messages are answered"))
                    break loop
                }
                guard let text = String(validating: whole.payload, as: UTF8.self) else {
                    send(.close(1007, "a text message must be UTF-8"))
                    break loop
                }
                handle(text)
            }
        }
        // What was queued is written; then, on the queue itself, nothing more will be.
        sends.sync { closed.store(true, ordering: .relaxed) }
    }

    private enum Received { case data, silent, ended }

    private func receive(into bytes: inout [UInt8]) -> Received {
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        let count = chunk.withUnsafeMutableBytes { buffer in
            SystemCall.restarting { recv(fd, buffer.baseAddress, buffer.count, 0) }
        }
        if count > 0 {
            bytes += chunk[..<count]
            return .data
        }
        return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? .silent : .ended
    }
}
