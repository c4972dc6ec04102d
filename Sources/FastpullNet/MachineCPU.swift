import Glibc

/// The whole machine's CPU time, from the first line of `/proc/stat`: with a local server (or anything
/// else) sharing the cores, the download's own CPU time can be well under the cores while the machine
/// has none left, and then more connections only take CPU from the server that feeds them.
package enum MachineCPU {
    /// Busy and total CPU seconds of all cores since boot.
    package struct Reading: Sendable, Equatable {
        package var busy: Double
        package var total: Double
    }

    /// Now's reading; nil where `/proc/stat` cannot be read.
    package static var now: Reading? { read("/proc/stat") }

    /// The reading in the file at `path`, laid out as `/proc/stat`; nil where it cannot be read.
    package static func read(_ path: String) -> Reading? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 256)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return parse(bytes[..<count])
    }

    /// Parses the `cpu` line: user nice system idle iowait irq softirq steal, in clock ticks.
    package static func parse(_ text: some Collection<UInt8>) -> Reading? {
        let line = text.prefix { $0 != UInt8(ascii: "\n") }
        let fields = line.split(separator: UInt8(ascii: " "))
        guard fields.count >= 5, fields[0].elementsEqual("cpu".utf8) else { return nil }
        let ticks = fields.dropFirst().prefix(8).compactMap { Double(String(decoding: $0, as: UTF8.self)) }
        guard ticks.count >= 4 else { return nil }
        let perSecond = Double(max(sysconf(Int32(_SC_CLK_TCK)), 1))
        let idle = ticks[3] + (ticks.count > 4 ? ticks[4] : 0)
        let total = ticks.reduce(0, +)
        return Reading(busy: (total - idle) / perSecond, total: total / perSecond)
    }
}
