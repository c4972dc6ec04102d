import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A SOCKS5 proxy on loopback (RFC 1928 `CONNECT`, with no authentication or RFC 1929 user/password):
/// it tunnels each client to where it asks and records what was asked, for tests of SOCKS5 clients.
/// A name is resolved here (`socks5h://`); an address is used as given (`socks5://`).
public final class SOCKS5Server: Sendable {
    /// The port it listens on (127.0.0.1).
    public let port: Int
    private let listenSocket: Int32
    private let core: Core

    /// Starts listening on a free port; with `credentials`, a client must give them.
    public init(credentials: (user: String, password: String)? = nil) throws {
        let (socket, port) = try Listener.open(host: "127.0.0.1", port: 0)
        _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) & ~O_NONBLOCK)
        self.listenSocket = socket
        self.port = port
        let core = Core(credentials: credentials)
        self.core = core
        Thread.detachNewThread {
            while true {
                let client = accept(socket, nil, nil)
                guard client >= 0 else {
                    if errno == EINTR { continue }
                    return
                }
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                Thread.detachNewThread { core.serve(client) }
            }
        }
    }

    deinit {
        // Wakes the accept loop, which then ends.
        shutdown(listenSocket, Int32(SHUT_RDWR))
        close(listenSocket)
    }

    /// What each `CONNECT` asked for: `name HOST:PORT`, `ipv4 A.B.C.D:PORT` or `ipv6 X:PORT`, and
    /// `refused` for a client whose credentials were wrong.
    public var requests: [String] { core.asked.withLock { $0 } }
}

/// The part each connection's thread uses.
private final class Core: Sendable {
    let credentials: (user: String, password: String)?
    let asked = Mutex<[String]>([])

    init(credentials: (user: String, password: String)?) {
        self.credentials = credentials
    }

    func serve(_ client: Int32) {
        defer { close(client) }
        guard let greeting = read(client, 2), greeting[0] == 5,
            let methods = read(client, Int(greeting[1]))
        else { return }
        if let credentials {
            guard methods.contains(2) else {
                write(client, [5, 0xff])
                return
            }
            write(client, [5, 2])
            guard let version = read(client, 2), version[0] == 1,
                let user = read(client, Int(version[1])), let length = read(client, 1),
                let password = read(client, Int(length[0]))
            else { return }
            guard String(decoding: user, as: UTF8.self) == credentials.user,
                String(decoding: password, as: UTF8.self) == credentials.password
            else {
                asked.withLock { $0.append("refused") }
                write(client, [1, 1])
                return
            }
            write(client, [1, 0])
        } else {
            guard methods.contains(0) else {
                write(client, [5, 0xff])
                return
            }
            write(client, [5, 0])
        }
        guard let head = read(client, 4), head[0] == 5, head[1] == 1 else { return }
        let host: String
        let kind: String
        switch head[3] {
        case 1:
            guard let bytes = read(client, 4) else { return }
            host = bytes.map(String.init).joined(separator: ".")
            kind = "ipv4"
        case 3:
            guard let length = read(client, 1), let name = read(client, Int(length[0])) else { return }
            host = String(decoding: name, as: UTF8.self)
            kind = "name"
        case 4:
            guard var bytes = read(client, 16) else { return }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            _ = inet_ntop(AF_INET6, &bytes, &text, socklen_t(text.count))
            host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            kind = "ipv6"
        default:
            write(client, [5, 8, 0, 1, 0, 0, 0, 0, 0, 0])
            return
        }
        guard let portBytes = read(client, 2) else { return }
        let port = Int(portBytes[0]) << 8 | Int(portBytes[1])
        asked.withLock { $0.append("\(kind) \(host):\(port)") }
        guard let target = connect(host: host, port: port) else {
            write(client, [5, 5, 0, 1, 0, 0, 0, 0, 0, 0])
            return
        }
        defer { close(target) }
        write(client, [5, 0, 0, 1, 127, 0, 0, 1, 0, 0])
        relay(client, target)
    }

    /// A TCP connection to `host` (a name or an address) on `port`, or nil.
    private func connect(host: String, port: Int) -> Int32? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0 else { return nil }
        defer { freeaddrinfo(list) }
        var entry = list
        while let current = entry {
            let fd = socket(current.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
            if fd >= 0 {
                if Glibc.connect(fd, current.pointee.ai_addr, current.pointee.ai_addrlen) == 0 { return fd }
                close(fd)
            }
            entry = current.pointee.ai_next
        }
        return nil
    }

    /// Copies bytes both ways until either side ends.
    private func relay(_ a: Int32, _ b: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var fds = [
            pollfd(fd: a, events: Int16(POLLIN), revents: 0),
            pollfd(fd: b, events: Int16(POLLIN), revents: 0),
        ]
        while poll(&fds, 2, -1) > 0 {
            for (index, other) in [(0, b), (1, a)] where fds[index].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { recv(fds[index].fd, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { return }
                guard
                    buffer.withUnsafeBytes({
                        Syscalls.sendAll(other, UnsafeRawBufferPointer(rebasing: $0[..<count]), more: false)
                    }) == count
                else {
                    return
                }
            }
        }
    }

    private func read(_ fd: Int32, _ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + filled, count - filled, 0) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { return nil }
            filled += got
        }
        return bytes
    }

    private func write(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Syscalls.sendAll(fd, $0, more: false) }
    }
}
