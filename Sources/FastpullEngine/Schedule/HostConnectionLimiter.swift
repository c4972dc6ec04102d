import FastpullHTTP
import FastpullNet
import FoundationEssentials

/// The per-host connection count shared by every download of a ``FastpullClient``, so that several
/// downloads from one server together stay polite. A host is a name and a port, as curl counts its
/// connections per host: two servers on one machine (or a test's servers on 127.0.0.1) each have
/// their own limit.
package final class HostConnectionLimiter: Sendable {
    /// What `url`'s connections count against: its host and port (the scheme's default when the URL
    /// names none).
    static func key(for url: URL) -> String {
        guard let origin = Origin(url) else { return url.host(percentEncoded: false) ?? "" }
        return origin.hostKey
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

/// The places of the per-host limit one download's connections to its host hold: its own, taken
/// before the probe and held until the download ends (so that the probe's connection, whose answer
/// becomes the first connection's, counts from the moment it opens), and one more for each further
/// connection. Places are interchangeable: the first connection to start takes the own place when it
/// is free, the others take new ones, and a connection that ends gives back a new one first.
package final class DownloadPlaces: Sendable {
    private let limiter: HostConnectionLimiter
    let host: String
    private let limit: Int
    /// Whether the own place is held at all (not when the file came from another host after a
    /// redirect), whether it is free, and how many further places are held.
    private let state: PlainMutex<(ownHeld: Bool, ownFree: Bool, further: Int)>

    init(limiter: HostConnectionLimiter, host: String, limit: Int, ownPlace: Bool) {
        self.limiter = limiter
        self.host = host
        self.limit = limit
        state = PlainMutex((ownPlace, ownPlace, 0))
    }

    /// Takes a place for a connection: the own one if free, else a new one if the host has one.
    func acquire() -> Bool {
        state.withLock { state in
            if state.ownFree {
                state.ownFree = false
                return true
            }
            guard limiter.acquire(host, limit: limit) else { return false }
            state.further += 1
            return true
        }
    }

    /// Gives back the place of a connection that ended.
    func release() {
        state.withLock { state in
            if state.further > 0 {
                state.further -= 1
                limiter.release(host)
            } else if state.ownHeld {
                state.ownFree = true
            }
        }
    }

    /// How many more connections could start now.
    var available: Int {
        let own = state.withLock { $0.ownFree ? 1 : 0 }
        return own + max(0, limit - limiter.count(host))
    }
}
