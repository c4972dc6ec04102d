/// A downloaded file compared with the bytes that were published.
enum Comparison: Equatable, CustomStringConvertible {
    /// Byte for byte the same.
    case identical
    /// No file at the output path.
    case missing
    /// A file of `size` bytes that differs.
    case different(size: Int)

    var description: String {
        switch self {
        case .identical: "identical"
        case .missing: "no file at the output path"
        case .different(let size): "a \(size)-byte file that differs from what was published"
        }
    }
}
