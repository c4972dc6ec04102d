import FoundationEssentials
import Glibc

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
        return unit == 0 ? "\(bytes) B" : printf("%.1f ", value) + units[unit]
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
        return (value < 10 ? printf("%.1f", value) : printf("%.0f", value)) + units[unit]
    }

    /// `3.2s`, `4m05s`, `2h10m`.
    package static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "?" }
        if seconds < 60 { return printf("%.1fs", seconds) }
        let total = Int(seconds.rounded())
        if total < 3600 { return "\(total / 60)m\(printf("%02ld", total % 60))s" }
        if total < 360_000 { return "\(total / 3600)h\(printf("%02ld", total / 60 % 60))m" }
        return ">99h"
    }

    /// `arguments` formatted as C's `printf` formats them (`%.3f`, `%02d`, `%04x`; numbers only).
    package static func printf(_ format: String, _ arguments: any CVarArg...) -> String {
        func formatted(into buffer: inout [UInt8]) -> Int {
            buffer.withUnsafeMutableBytes { raw in
                withVaList(arguments) {
                    Int(
                        vsnprintf(raw.baseAddress!.assumingMemoryBound(to: CChar.self), raw.count, format, $0)
                    )
                }
            }
        }
        var buffer = [UInt8](repeating: 0, count: 64)
        var length = formatted(into: &buffer)
        if length >= buffer.count {
            buffer = [UInt8](repeating: 0, count: length + 1)
            length = formatted(into: &buffer)
        }
        return String(decoding: buffer[..<max(length, 0)], as: UTF8.self)
    }
}
