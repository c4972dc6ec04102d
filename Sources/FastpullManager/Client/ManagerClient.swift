import FastpullEngine
import FastpullNet
import FoundationEssentials
import Glibc

/// A client of a running manager (`fastpull daemon`) on this machine, for `fastpull add`, `ls`,
/// `pause`, `resume` and `rm`: one JSON-RPC call per connection to `127.0.0.1:port/jsonrpc`, the
/// secret put first as `token:`. Its socket calls run on a thread of their own, never on Swift's
/// cooperative pool.
public struct ManagerClient: Sendable {
    /// The daemon's RPC port.
    public var port: Int
    /// The daemon's secret, when it has one.
    public var secret: String?

    /// A client of the daemon at `127.0.0.1:port`.
    public init(port: Int, secret: String?) {
        self.port = port
        self.secret = secret
    }

    /// Why a call failed.
    public enum Failure: Error, CustomStringConvertible, Equatable {
        /// No daemon answers on the port.
        case noDaemon(port: Int, reason: String)
        /// The daemon answered with an error (aria2's code and message).
        case refused(code: Int64, message: String)
        /// The answer was not JSON-RPC.
        case malformed(String)

        /// What happened, and what to do.
        public var description: String {
            switch self {
            case .noDaemon(let port, let reason):
                "no fastpull daemon answers on 127.0.0.1:\(port) (\(reason)); start one with 'fastpull daemon', or name its port with --rpc-port"
            case .refused(_, let message) where message == "Unauthorized":
                "the daemon refused the secret; give its file with --rpc-secret-file (fastpull daemon keeps it in rpc-secret beside its list) or set FASTPULL_RPC_SECRET"
            case .refused(_, let message): message
            case .malformed(let detail): "the daemon's answer is not JSON-RPC: \(detail)"
            }
        }
    }

    /// Calls `method` with `params` (the token put first) and returns its result.
    package func call(_ method: String, _ params: [JSONValue] = []) async throws(Failure) -> JSONValue {
        let token: [JSONValue] = secret.map { [.string("token:\($0)")] } ?? []
        let body = JSONValue.object([
            ("jsonrpc", .string("2.0")), ("id", .string("fastpull")), ("method", .string(method)),
            ("params", .array(token + params)),
        ]).text
        let port = port
        let answer: Result<[UInt8], Failure> = await withCheckedContinuation { continuation in
            OSThread.detach { continuation.resume(returning: Self.post(Array(body.utf8), port: port)) }
        }
        let bytes = try answer.get()
        guard let headEnd = RPCHTTPServer.find([13, 10, 13, 10], in: bytes),
            let value = JSONInput.parse(Array(bytes[(headEnd + 4)...]))
        else {
            throw .malformed(String(decoding: bytes.prefix(200), as: UTF8.self))
        }
        if let error = value["error"] {
            throw .refused(code: error["code"]?.integer ?? 1, message: error["message"]?.string ?? "failed")
        }
        guard let result = value["result"] else { throw .malformed(value.text) }
        return result
    }

    /// Sends one request and reads the answer to the end (`Connection: close`).
    private static func post(_ body: [UInt8], port: Int) -> Result<[UInt8], Failure> {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(.noDaemon(port: port, reason: NetError.errnoText(errno))) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                SystemCall.restarting {
                    connect(fd, socketAddress, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard connected == 0 else {
            return .failure(.noDaemon(port: port, reason: NetError.errnoText(errno)))
        }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let head =
            "POST /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        let request = Array(head.utf8) + body
        var sent = 0
        while sent < request.count {
            let count = request.withUnsafeBytes { buffer in
                SystemCall.restarting {
                    send(fd, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
                }
            }
            guard count > 0 else { return .failure(.noDaemon(port: port, reason: NetError.errnoText(errno))) }
            sent += count
        }
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer in
                SystemCall.restarting { recv(fd, buffer.baseAddress, buffer.count, 0) }
            }
            guard count > 0 else { break }
            answer += chunk[..<count]
        }
        return .success(answer)
    }
}
