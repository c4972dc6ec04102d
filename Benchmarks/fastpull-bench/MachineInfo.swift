import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The machine, date and commit a report belongs to.
struct MachineInfo: Sendable, Codable {
    var cpu: String
    var cores: Int
    var memoryGiB: Double
    var kernel: String
    var date: String
    var commit: String
    var swift: String
    /// 1-minute load average when the session started and ended (other work on the machine shows here).
    var loadAtStart: Double
    var loadAtEnd: Double?

    /// Reads `/proc`, `uname`, `git` and `swift --version`.
    static func current(packageRoot: String) -> MachineInfo {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model =
            cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .map {
                String($0.split(separator: ":", maxSplits: 1).last ?? "").trimmingCharacters(in: .whitespaces)
            }
            ?? "unknown CPU"
        let meminfo = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8)) ?? ""
        let memoryKiB =
            meminfo.split(separator: "\n").first { $0.hasPrefix("MemTotal:") }
            .flatMap { Double($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        var names = utsname()
        uname(&names)
        let release = withUnsafeBytes(of: &names.release) {
            String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return MachineInfo(
            cpu: model, cores: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), memoryGiB: memoryKiB / 1_048_576,
            kernel: "Linux \(release)", date: formatter.string(from: Date()),
            commit: commit(packageRoot: packageRoot),
            swift: captureOutput("swift", ["--version"], mergeErrors: true)?
                .split(separator: "\n").first.map(String.init) ?? "unknown",
            loadAtStart: loadAverage(), loadAtEnd: nil)
    }

    /// `abc1234`, `abc1234-dirty`, or `no commit yet`.
    static func commit(packageRoot: String) -> String {
        guard
            let hash = captureOutput("git", ["-C", packageRoot, "rev-parse", "--short", "HEAD"])?
                .trimmingCharacters(in: .whitespacesAndNewlines), !hash.isEmpty
        else { return "no commit yet (uncommitted working tree)" }
        let status = captureOutput("git", ["-C", packageRoot, "status", "--porcelain"]) ?? ""
        return status.isEmpty ? hash : "\(hash)-dirty"
    }

    /// The 1-minute load average.
    static func loadAverage() -> Double {
        var loads = [Double](repeating: 0, count: 3)
        return getloadavg(&loads, 3) > 0 ? loads[0] : 0
    }
}
