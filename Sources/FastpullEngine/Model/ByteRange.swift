import FastpullHTTP

/// A part of the remote file to fetch instead of all of it (curl's `-r`): the saved file is exactly
/// those bytes. Bytes are counted from 0; `end` is inclusive.
public enum ByteRange: Sendable, Hashable, CustomStringConvertible {
    /// From `start` through `end` (to the file's end when nil, or when `end` lies past it).
    case from(Int64, through: Int64? = nil)
    /// The last `count` bytes (all of a shorter file).
    case last(Int64)

    /// `START-END`, `START-` or `-N`, as curl writes it.
    public var description: String { window.description }

    /// The window of the connection pool that fetches it.
    var window: ByteWindow {
        switch self {
        case .from(let start, let end): ByteWindow(.from(start, through: end))
        case .last(let count): ByteWindow(.last(count))
        }
    }
}
