import Foundation

/// `value` with `digits` decimals ("1.23"), without locale surprises.
func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "—" }
    return String(format: "%.\(digits)f", value)
}

/// Bytes as MiB with one decimal, or KiB for small values.
func mebibytes(_ bytes: Int64) -> String {
    bytes >= 1_048_576 || bytes == 0
        ? "\(fixed(Double(bytes) / 1_048_576, bytes % 1_048_576 == 0 ? 0 : 1)) MiB"
        : "\(fixed(Double(bytes) / 1024, 0)) KiB"
}

/// Escapes text for XML (SVG) content and attributes.
func xmlEscaped(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
}

/// Escapes text for a Markdown table cell.
func cellEscaped(_ text: String) -> String {
    text.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ")
}
