/// Something a running download wants its user to know, delivered through ``Download/events``.
public enum Event: Sendable, Equatable {
    /// A journal was found and the download continues from it, keeping `keptBytes` of `totalBytes`.
    case resumed(keptBytes: Int64, totalBytes: Int64)
    /// The download starts over from zero, for the reason given.
    case restarting(reason: String)
    /// Something worth a warning that does not stop the download.
    case warning(String)
}
