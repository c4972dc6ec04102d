import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A tiny loopback HTTP/1.1 server for what the fixture server does not do: it answers every path in
/// `routes` with its body and extra header fields (such as `Content-Disposition`), honours a single
/// `Range: bytes=a-b`, and closes each connection after one response. Its threads are its own, never
/// the cooperative pool's.
final class HeaderServer: Sendable {
    struct Route: Sendable {
        var body: [UInt8]
        var headers: [(String, String)]
    }

    let port: Int
    private let listener: Int32
    private let routes: [String: Route]

    init(routes: [String: Route]) throws {
        self.routes = routes
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        listener = fd
        Thread { [self] in acceptLoop() }.start()
    }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            Thread { [self] in serve(client) }.start()
        }
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !request.ends(with: Array("\r\n\r\n".utf8)) {
            let count = recv(client, &buffer, buffer.count, 0)
            if count <= 0 { return }
            request += buffer[0..<count]
            if request.count > 65536 { return }
        }
        let lines = String(decoding: request, as: UTF8.self).components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count == 3 else { return }
        let method = String(parts[0])
        let path = String(parts[1])
        var range: ClosedRange<Int>?
        for line in lines.dropFirst() where line.lowercased().hasPrefix("range: bytes=") {
            let spec = line.dropFirst("range: bytes=".count).split(separator: "-")
            if spec.count == 2, let first = Int(spec[0]), let last = Int(spec[1]), first <= last {
                range = first...last
            }
        }
        var head: String
        var body: [UInt8] = []
        if let route = routes[path] {
            let size = route.body.count
            let extra = route.headers.map { "\($0.0): \($0.1)\r\n" }.joined()
            if let wanted = range, wanted.lowerBound < size {
                let slice = wanted.lowerBound...min(wanted.upperBound, size - 1)
                body = Array(route.body[slice])
                head =
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes \(slice.lowerBound)-\(slice.upperBound)/\(size)\r\n"
                    + extra
            } else {
                body = route.body
                head = "HTTP/1.1 200 OK\r\n" + extra
            }
            head += "Accept-Ranges: bytes\r\nETag: \"h-\(size)\"\r\n"
        } else {
            body = Array("not found\n".utf8)
            head = "HTTP/1.1 404 Not Found\r\n"
        }
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        var output = Array(head.utf8)
        if method != "HEAD" { output += body }
        var sent = 0
        while sent < output.count {
            let count = output[sent...].withUnsafeBytes {
                send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if count <= 0 { return }
            sent += count
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
