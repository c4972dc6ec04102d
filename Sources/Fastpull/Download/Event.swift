/// Something a running download wants its user to know, delivered through ``Download/events``.
public enum Event: Sendable, Equatable {
    /// A journal was found and the download continues from it, keeping `keptBytes` of `totalBytes`.
    case resumed(keptBytes: Int64, totalBytes: Int64)
    /// The download starts over from zero, for the reason given.
    case restarting(reason: String)
    /// Something worth a warning that does not stop the download.
    case warning(String)
    /// A connection failed and retries after `delaySeconds`.
    case retry(connection: Int, reason: String, delaySeconds: Double)
    /// An idle connection took over `[offset, end)` from a busier one (`hedged` when the owner was
    /// much slower and stops early).
    case steal(from: Int, to: Int, offset: Int64, end: Int64, hedged: Bool)
    /// The number of connections changed (adaptive ramp-up, a refusal, or a stall).
    case connections(Int)
}
