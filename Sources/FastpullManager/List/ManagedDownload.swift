import FoundationEssentials

/// One download of the manager's list: what to fetch, where, with which options, and where it is.
public struct ManagedDownload: Sendable, Equatable {
    /// Its identifier: 16 hexadecimal digits, as aria2's GIDs.
    public var gid: String
    /// Where it is in its life.
    public var status: ItemStatus
    /// The URLs of the file: the first asked for, the others its mirrors.
    public var uris: [String]
    /// The folder it is saved in.
    public var directory: String
    /// The file name, when one was given (else the server's name, found when it starts).
    public var outputName: String?
    /// Its options as they were given (aria2's names and string values), kept verbatim.
    public var options: [String: String]
    /// The file's size, once known (0 before).
    public var totalLength: Int64
    /// Bytes saved so far, as last recorded (the journal beside the file has the exact ranges).
    public var completedLength: Int64
    /// Why it failed, for an item in ``ItemStatus/error``: aria2's error code…
    public var errorCode: Int?
    /// …and a message that says what to do.
    public var errorMessage: String?

    /// A new item, waiting.
    public init(
        gid: String, uris: [String], directory: String, outputName: String? = nil,
        options: [String: String] = [:]
    ) {
        self.gid = gid
        self.status = .waiting
        self.uris = uris
        self.directory = directory
        self.outputName = outputName
        self.options = options
        self.totalLength = 0
        self.completedLength = 0
    }
}

/// Why the list refused a change.
public enum DownloadListError: Error, Equatable, CustomStringConvertible {
    /// No item has this GID.
    case unknown(gid: String)
    /// The item's status does not allow the event (``ItemStatus/applying(_:)``).
    case notAllowed(gid: String, status: ItemStatus, event: ItemEvent)
    /// The item is not in the queue (only waiting and paused ones are), so it has no position.
    case notQueued(gid: String, status: ItemStatus)
    /// The list was written by a newer Fastpull, whose schema this one does not know.
    case newerSchema(path: String, version: Int)
    /// An item was given no URL.
    case noURI
    /// A GID given is not 16 hexadecimal digits.
    case badGID(String)
    /// A GID given is another item's.
    case gidInUse(String)
    /// `dir` or `out` changed while the item downloads.
    case movingActive(gid: String)

    /// What went wrong, in a sentence.
    public var description: String {
        switch self {
        case .unknown(let gid): "no download has GID \(gid)"
        case .notAllowed(let gid, let status, let event):
            "download \(gid) is \(status.rawValue): it cannot \(event.rawValue)"
        case .notQueued(let gid, let status):
            "download \(gid) is \(status.rawValue): only waiting and paused downloads have a place in the queue"
        case .newerSchema(let path, let version):
            "\(path) holds a download list of schema \(version), written by a newer fastpull; use that one"
        case .noURI: "a download needs at least one URL"
        case .badGID(let gid): "GID \(gid) is not 16 hexadecimal digits"
        case .gidInUse(let gid): "GID \(gid) is already in use"
        case .movingActive(let gid): "download \(gid) is active: pause it before changing dir or out"
        }
    }
}
