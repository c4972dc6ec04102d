/// How many connections a download uses: a fixed number, or chosen as it goes.
public enum ConnectionCount: Sendable, Hashable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    /// Start with a few and add more while the aggregate throughput keeps improving, up to
    /// ``Configuration/Connections/maximum``.
    case automatic
    /// Exactly this many (1...128).
    case fixed(Int)

    /// `connections: 8` means `.fixed(8)`.
    public init(integerLiteral value: Int) {
        self = .fixed(value)
    }

    /// `auto` or the number.
    public var description: String {
        switch self {
        case .automatic: return "auto"
        case .fixed(let count): return String(count)
        }
    }
}
