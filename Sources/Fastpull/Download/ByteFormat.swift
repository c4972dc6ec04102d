import Foundation

/// Human-readable sizes, speeds and durations, in binary units (KiB, MiB, GiB).
package enum ByteFormat {
    /// `512 B`, `1.5 KiB`, `1.0 GiB`.
    package static func size(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
    }

    /// `12.0 MiB/s`.
    package static func speed(_ bytesPerSecond: Double) -> String {
        size(Int64(bytesPerSecond.isFinite ? max(bytesPerSecond, 0) : 0)) + "/s"
    }

    /// The narrow form for small windows: `512B`, `1.5K`, `450M`, `1.0G`.
    package static func compact(_ bytes: Int64) -> String {
        let units = ["B", "K", "M", "G", "T"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(bytes)B" }
        return (value < 10 ? String(format: "%.1f", value) : String(format: "%.0f", value)) + units[unit]
    }

    /// `3.2s`, `4m05s`, `2h10m`.
    package static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "?" }
        if seconds < 60 { return String(format: "%.1fs", seconds) }
        let total = Int(seconds.rounded())
        if total < 3600 { return "\(total / 60)m\(String(format: "%02d", total % 60))s" }
        if total < 360_000 { return "\(total / 3600)h\(String(format: "%02d", total / 60 % 60))m" }
        return ">99h"
    }
}
