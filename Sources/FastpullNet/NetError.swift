import Glibc

/// Errors from sockets, DNS and TLS.
///
/// `description` is a sentence a user can read: what failed, against which host, and why.
package enum NetError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `getaddrinfo` failed; `message` is its `gai_strerror` text.
    /// `permanent`: the name does not exist (or has no address); asking again will not change that.
    case resolve(host: String, message: String, permanent: Bool = false)
    /// Every address of `host` refused or was unreachable; `message` is the reason of the last attempt
    /// (the `strerror` text, e.g. "Connection refused").
    case connect(host: String, port: Int, message: String)
    /// No progress within the timeout; the payload names the operation: "connect", "read", "write" or
    /// "TLS handshake".
    case timeout(String)
    /// The peer reset the connection or closed it unexpectedly; the payload is a complete sentence
    /// naming the peer and the operation.
    case reset(String)
    /// The TLS handshake failed for a reason other than certificate verification; the payload is a
    /// complete sentence naming the peer and the OpenSSL error.
    case tlsHandshake(String)
    /// The server's certificate was rejected (chain, hostname or expiry); the payload is a complete
    /// sentence naming the host and the verification error.
    case tlsVerification(String)
    /// The transport was shut down (usually by cancellation) while or before it was used.
    case cancelled
    /// Any other failed system call, with the call's name and its `errno`.
    case system(call: String, errno: Int32)
    /// The proxy (named) could not be reached: the error is the connection's to it.
    indirect case proxy(String, NetError)
    /// The local address connections are to come from (`--interface`) cannot be used: no such
    /// address or interface, none of the peer's family, or the system refused to bind to it. The
    /// payload is a complete sentence; asking again will not change it.
    case localAddress(String)
    /// The client certificate (`--cert`) or its key (`--key`) could not be loaded, or they do not
    /// match; the payload is a complete sentence.
    case clientCertificate(String)
    /// A SOCKS5 proxy speaks no SOCKS5, wants credentials it was not given, or refused them; the
    /// payload is a complete sentence.
    case socks(String)

    package var description: String {
        switch self {
        case .resolve(let host, let message, _):
            return "could not resolve host \(host): \(message)"
        case .connect(let host, let port, let message):
            let peer = NetError.hostAndPort(host, port)
            if message == NetError.errnoText(ECONNREFUSED) {
                return "connection refused by \(peer)"
            }
            return "could not connect to \(peer): \(message)"
        case .timeout(let operation):
            return "\(operation) timed out"
        case .reset(let sentence), .tlsHandshake(let sentence), .tlsVerification(let sentence):
            return sentence
        case .cancelled:
            return "the connection was cancelled"
        case .system(let call, let errno):
            return "\(call) failed: \(NetError.errnoText(errno))"
        case .proxy(let proxy, let error):
            return "could not reach the proxy \(proxy): \(error)"
        case .localAddress(let sentence), .clientCertificate(let sentence), .socks(let sentence):
            return sentence
        }
    }

    /// Whether this failed the connection to a proxy itself (resolving, connecting, or its closing
    /// before it answered), rather than the TLS handshake with the origin through it.
    package var isReachingTheProxy: Bool {
        switch self {
        case .resolve, .connect, .timeout("connect"): return true
        default: return false
        }
    }

    /// The system's error number behind this error, where one is known.
    package var systemError: Int32? {
        switch self {
        case .system(_, let code): return code
        case .connect(_, _, let message) where message == NetError.errnoText(ECONNREFUSED):
            return ECONNREFUSED
        case .proxy(_, let error): return error.systemError
        default: return nil
        }
    }

    /// Whether nothing listens at the peer's port (the connection was refused).
    package var isRefused: Bool {
        if case .connect(_, _, let message) = self {
            // Through a SOCKS5 proxy: its reply 5 is the origin's refusal.
            return message == NetError.errnoText(ECONNREFUSED) || message.hasSuffix(SOCKS5Refusal.suffix)
        }
        // A proxy nobody listens on is refused like an origin (it was retried with the whole budget:
        // 6.5 s per file, where a refused origin takes 0.2).
        if case .proxy(_, let error) = self { return error.isRefused }
        return false
    }

    /// Whether the host name does not exist (as opposed to a resolver that could not answer now).
    package var isUnknownHost: Bool {
        if case .resolve(_, _, let permanent) = self { return permanent }
        return false
    }

    /// Whether the process (or the system) has no file descriptor left for a socket or pipe.
    package var isOutOfDescriptors: Bool {
        if case .system(_, let code) = self { return code == EMFILE || code == ENFILE }
        if case .proxy(_, let error) = self { return error.isOutOfDescriptors }
        return false
    }

    /// `host:port`, with IPv6 literals in brackets (`[::1]:8080`).
    package static func hostAndPort(_ host: String, _ port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The `strerror` text of `code`, e.g. "Connection refused".
    package static func errnoText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}

/// How a SOCKS5 proxy's "connection refused" reply ends the message of the
/// ``NetError/connect(host:port:message:)`` it becomes, so that it counts as refused.
package enum SOCKS5Refusal {
    package static let suffix = ": connection refused"
}
