import FastpullNet
import Glibc

/// A TCP tunnel through a SOCKS5 proxy (RFC 1928), with no authentication or a user name and password
/// (RFC 1929): the client offers what it has, the proxy picks, then `CONNECT` to the origin. A
/// `socks5h://` proxy is given the origin's name to resolve; a `socks5://` one the address this side
/// resolves (as `-4`, `-6` and `--resolve` pick it).
///
/// The messages are built and read by pure functions (``greeting(offering:)``,
/// ``connectRequest(to:port:)``, ``replyLength(_:)`` and the like); ``open(to:through:tls:timeouts:addressing:)``
/// drives them over a socket.
package enum SOCKS5 {
    /// A user name and password for the proxy (each 1 to 255 bytes).
    package struct Credentials: Sendable, Hashable {
        package var user: String
        package var password: String

        package init(user: String, password: String) {
            self.user = user
            self.password = password
        }
    }

    /// Where the tunnel goes, as the `CONNECT` request names it.
    package enum Destination: Sendable, Equatable {
        case name(String)
        case ipv4([UInt8])
        case ipv6([UInt8])
    }

    /// The first message: version 5 and the methods offered (no authentication, and user/password
    /// when there are credentials).
    package static func greeting(offering credentials: Bool) -> [UInt8] {
        credentials ? [5, 2, 0, 2] : [5, 1, 0]
    }

    /// The RFC 1929 request.
    package static func authentication(_ credentials: Credentials) -> [UInt8] {
        let user = Array(credentials.user.utf8)
        let password = Array(credentials.password.utf8)
        return [1, UInt8(user.count)] + user + [UInt8(password.count)] + password
    }

    /// The `CONNECT` request.
    package static func connectRequest(to destination: Destination, port: Int) -> [UInt8] {
        var bytes: [UInt8] = [5, 1, 0]
        switch destination {
        case .name(let name):
            let encoded = Array(name.utf8)
            bytes += [3, UInt8(encoded.count)] + encoded
        case .ipv4(let address):
            bytes += [1] + address
        case .ipv6(let address):
            bytes += [4] + address
        }
        return bytes + [UInt8(port >> 8), UInt8(port & 0xff)]
    }

    /// How long a reply to `CONNECT` is, from its first five bytes; nil when they are no SOCKS5 reply.
    package static func replyLength(_ head: [UInt8]) -> Int? {
        guard head.count >= 5, head[0] == 5 else { return nil }
        switch head[3] {
        case 1: return 4 + 4 + 2
        case 3: return 4 + 1 + Int(head[4]) + 2
        case 4: return 4 + 16 + 2
        default: return nil
        }
    }

    /// What a reply code says (RFC 1928 §6).
    package static func replyText(_ code: UInt8) -> String {
        switch code {
        case 1: "general SOCKS server failure"
        case 2: "connection not allowed by ruleset"
        case 3: "network unreachable"
        case 4: "host unreachable"
        case 5: "connection refused"
        case 6: "TTL expired"
        case 7: "command not supported"
        case 8: "address type not supported"
        default: "reply \(code)"
        }
    }

    /// Connects to `proxy`, opens a tunnel to `origin` through it, and performs the TLS handshake with
    /// `origin` inside it when `tls` is given. Blocks the calling thread.
    ///
    /// Errors: ``NetError/proxy(_:_:)`` when the proxy cannot be reached; ``NetError/socks(_:)``
    /// (not retried) when it speaks no SOCKS5 or refuses the credentials; ``NetError/connect(host:port:message:)``
    /// naming the origin when the proxy could not connect to it; TLS errors from the handshake.
    package static func open(
        to origin: Origin, through proxy: Proxy, tls: TLSContext?, timeouts: Timeouts, addressing: Addressing
    ) throws(NetError) -> any Transport {
        let socket: Socket
        do {
            socket = try Connector.connectSocket(
                host: proxy.host, port: proxy.port, timeouts: timeouts, addressing: addressing)
        } catch {
            throw .proxy("\(proxy)", error)
        }
        do throws(NetError) {
            let destination: Destination
            if proxy.kind == .socks5h {
                destination = literal(origin.host) ?? .name(origin.host)
            } else {
                let addresses = try Resolver.resolve(
                    host: origin.host, port: origin.port, addressing: addressing)
                guard let first = addresses.first.flatMap(Self.destination) else {
                    throw NetError.resolve(host: origin.host, message: "no address", permanent: true)
                }
                destination = first
            }
            try handshake(on: socket, to: destination, origin: origin, proxy: proxy)
            if let tls {
                return try Connector.startTLS(on: socket, host: origin.host, tls: tls, timeouts: timeouts)
            }
            try socket.setIdleTimeout(timeouts.idle)
            return socket
        } catch {
            socket.close()
            throw error
        }
    }

    /// The greeting, the authentication the proxy picks, and the `CONNECT`, on `socket`.
    static func handshake(on socket: Socket, to destination: Destination, origin: Origin, proxy: Proxy)
        throws(NetError)
    {
        func notSOCKS() -> NetError {
            .socks("\(proxy) answered something that is not SOCKS5; is it a SOCKS5 proxy?")
        }
        try send(greeting(offering: proxy.socksCredentials != nil), on: socket)
        let choice = try receive(2, on: socket, proxy: proxy)
        guard choice[0] == 5 else { throw notSOCKS() }
        switch choice[1] {
        case 0:
            break
        case 2:
            guard let credentials = proxy.socksCredentials else { throw notSOCKS() }
            try send(authentication(credentials), on: socket)
            let status = try receive(2, on: socket, proxy: proxy)
            guard status[1] == 0 else {
                throw .socks("\(proxy) refused the user name and password of the proxy URL")
            }
        case 0xff:
            throw .socks(
                proxy.socksCredentials == nil
                    ? "\(proxy) wants credentials: give them in the proxy URL, \(proxy.kind.rawValue)://USER:PASSWORD@\(proxy.authority)"
                    : "\(proxy) accepts neither no authentication nor a user name and password")
        default:
            throw notSOCKS()
        }
        try send(connectRequest(to: destination, port: origin.port), on: socket)
        var reply = try receive(5, on: socket, proxy: proxy)
        guard reply[0] == 5 else { throw notSOCKS() }
        guard reply[1] == 0 else {
            throw .connect(
                host: origin.host, port: origin.port,
                message: "through \(proxy): \(replyText(reply[1]))")
        }
        guard let length = replyLength(reply) else { throw notSOCKS() }
        reply += try receive(length - 5, on: socket, proxy: proxy)
    }

    /// `host` as a destination, when it is an IP address.
    static func literal(_ host: String) -> Destination? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return .ipv4(withUnsafeBytes(of: v4) { Array($0) }) }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return .ipv6(withUnsafeBytes(of: v6) { Array($0) }) }
        return nil
    }

    /// A resolved address as a destination.
    static func destination(_ address: SocketAddress) -> Destination? {
        literal(address.numericHost)
    }

    private static func send(_ bytes: [UInt8], on socket: Socket) throws(NetError) {
        let sent = bytes.withUnsafeBytes { buffer in
            Result { () throws(NetError) in try socket.write(buffer) }
        }
        try sent.get()
    }

    /// Exactly `count` bytes.
    private static func receive(_ count: Int, on socket: Socket, proxy: Proxy) throws(NetError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let read = try bytes.withUnsafeMutableBytes { buffer in
                Result { () throws(NetError) -> Int in
                    try socket.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
                }
            }.get()
            guard read > 0 else {
                throw .socks("\(proxy) closed the connection during the SOCKS5 handshake")
            }
            filled += read
        }
        return bytes
    }
}
