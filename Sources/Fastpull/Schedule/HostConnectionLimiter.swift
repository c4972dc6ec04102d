import FoundationEssentials

/// The per-host connection limit shared by every download in the process, so that several downloads
/// from one server together stay polite. A host is a name and a port, as curl counts its
/// connections per host: two servers on one machine (or a test's servers on 127.0.0.1) each have
/// their own limit.
final class HostConnectionLimiter: Sendable {
    /// The one limiter of this process.
    static let shared = HostConnectionLimiter()

    /// What `url`'s connections count against: its host and port (the scheme's default when the URL
    /// names none).
    static func key(for url: URL) -> String {
        guard let origin = Origin(url) else { return url.host(percentEncoded: false) ?? "" }
        return "\(origin.host.lowercased()):\(origin.port)"
    }

    private let open = PlainMutex<[String: Int]>([:])

    /// Takes a connection slot for `host` if fewer than `limit` are taken.
    func acquire(_ host: String, limit: Int) -> Bool {
        open.withLock { open in
            let current = open[host, default: 0]
            guard current < limit else { return false }
            open[host] = current + 1
            return true
        }
    }

    func release(_ host: String) {
        open.withLock { open in
            let remaining = open[host, default: 1] - 1
            open[host] = remaining > 0 ? remaining : nil
        }
    }

    func count(_ host: String) -> Int { open.withLock { $0[host, default: 0] } }
}
