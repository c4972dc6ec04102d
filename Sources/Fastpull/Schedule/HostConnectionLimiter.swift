import Synchronization

/// The per-host connection limit shared by every download in the process, so that several downloads
/// from one server together stay polite.
final class HostConnectionLimiter: Sendable {
    /// The one limiter of this process.
    static let shared = HostConnectionLimiter()

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
