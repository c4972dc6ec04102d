import Foundation

/// Human-readable sizes and speeds, in binary units (KiB, MiB, GiB).
enum ByteFormat {
    static func size(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
    }

    static func speed(_ bytesPerSecond: Double) -> String {
        size(Int64(bytesPerSecond.isFinite ? bytesPerSecond : 0)) + "/s"
    }

    static func duration(_ seconds: Double) -> String {
        if seconds < 60 { return String(format: "%.1fs", seconds) }
        let total = Int(seconds.rounded())
        if total < 3600 { return "\(total / 60)m\(String(format: "%02d", total % 60))s" }
        return "\(total / 3600)h\(String(format: "%02d", total / 60 % 60))m"
    }
}
