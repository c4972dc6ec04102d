import Fastpull
import FastpullEngine
import FastpullNet
import FoundationEssentials

/// An item waiting for the network: not started before `until`, nor before the network changes,
/// whichever comes first.
struct NetworkHold: Sendable {
    var until: ContinuousClock.Instant
    /// Holds in a row, for the back-off.
    var attempt: Int
    /// What failed, for the front-ends.
    var reason: String

    /// The wait after `attempt` holds in a row: 2, 4, 8, 16, 32, then 60 s.
    static func delay(attempt: Int) -> Duration { .seconds(min(1 << min(attempt, 6), 60)) }
}

/// The network's part in the queue. The model: a transfer that fails for a network reason while the
/// kernel has no route to its host failed because the network is away, not because of the item or its
/// server. Such an item goes back to waiting (``ItemEvent/networkLost``), keeping its journal, and is
/// held: it starts again when the kernel says a link, address or route changed (``networkChanged()``),
/// or after a back-off of 2 s doubling to 60 s, whichever comes first. It never ends in `error` while
/// offline, and never spends its retries against a network that is not there; a failure while a
/// route exists is the server's, and ends the item as before.
extension DownloadQueue {
    /// Why `item`'s network failure is for want of a network, or nil when the network is there (the
    /// kernel is asked on a thread of its own).
    func networkAway(for item: ManagedDownload, _ error: FastpullError) async -> String? {
        guard let url = item.uris.first.flatMap({ URL(string: $0) }), let host = url.host() else {
            return nil
        }
        let port = url.port ?? (url.scheme == "https" ? 443 : 80)
        let away = await withCheckedContinuation { continuation in
            OSThread.detach { continuation.resume(returning: NetworkReach.isAway(host: host, port: port)) }
        }
        return away ? error.message : nil
    }

    /// Holds `gid` for the next back-off, and starts what fits once it ends.
    func hold(_ gid: String, because reason: String) {
        let until = state.withLock { state in
            let attempt = (state.held[gid]?.attempt ?? 0) + 1
            let hold = NetworkHold(
                until: .now + NetworkHold.delay(attempt: attempt), attempt: attempt, reason: reason)
            state.held[gid] = hold
            return hold.until
        }
        Task { [self] in
            try? await Task.sleep(until: until)
            fill()
        }
    }

    /// Forgets `gid`'s hold (the user paused, resumed or removed it).
    func release(_ gid: String) {
        _ = state.withLock { $0.held.removeValue(forKey: gid) }
    }

    /// The network changed: every held item may start now, its back-off begun again.
    public func networkChanged() {
        let any = state.withLock { state in
            for gid in state.held.keys {
                state.held[gid]?.until = .now
                state.held[gid]?.attempt = 0
            }
            return !state.held.isEmpty
        }
        if any { fill() }
    }

    /// Why `gid` waits, when it waits for the network.
    public func waitingForNetwork(_ gid: String) -> String? {
        state.withLock { $0.held[gid] }.map { "waiting for the network (\($0.reason)); it resumes by itself" }
    }
}
