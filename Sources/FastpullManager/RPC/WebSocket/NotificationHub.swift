import FastpullEngine
import Synchronization

/// Every WebSocket connected to `/jsonrpc`, and aria2's notifications sent to each: a download that
/// starts, pauses, stops (removed), completes or fails (`aria2.onDownloadStart`, `…Pause`, `…Stop`,
/// `…Complete`, `…Error`, with the GID). Sending never waits on a client: each connection queues its
/// own sends.
final class NotificationHub: Sendable {
    private let connections = Mutex<(next: Int, open: [Int: WebSocketConnection])>((0, [:]))

    /// Sends `connection` every notification until ``leave(_:)``; returns its ticket.
    func join(_ connection: WebSocketConnection) -> Int {
        connections.withLock { state in
            state.next += 1
            state.open[state.next] = connection
            return state.next
        }
    }

    /// Stops sending to the connection with `ticket`.
    func leave(_ ticket: Int) {
        _ = connections.withLock { $0.open.removeValue(forKey: ticket) }
    }

    /// How many WebSockets listen now.
    var listeners: Int { connections.withLock { $0.open.count } }

    /// aria2's notification for an item that moved to `status` on `event`, if aria2 sends one.
    static func method(for event: ItemEvent, to status: ItemStatus) -> String? {
        switch (event, status) {
        case (.start, .active): "aria2.onDownloadStart"
        case (.pause, .paused): "aria2.onDownloadPause"
        case (.remove, .removed): "aria2.onDownloadStop"
        case (.finish, .complete): "aria2.onDownloadComplete"
        case (.fail, .error): "aria2.onDownloadError"
        default: nil
        }
    }

    /// Tells every listener that `gid` moved to `status` on `event`, where aria2 would.
    func notify(_ gid: String, event: ItemEvent, status: ItemStatus) {
        guard let method = Self.method(for: event, to: status) else { return }
        let text = JSONValue.object([
            ("jsonrpc", .string("2.0")), ("method", .string(method)),
            ("params", .array([.object([("gid", .string(gid))])])),
        ]).text
        for connection in connections.withLock({ Array($0.open.values) }) { connection.send(text: text) }
    }
}
