/// One measured run of one tool in one scenario.
struct Sample: Sendable, Codable {
    var wallSeconds: Double
    var userSeconds: Double
    var systemSeconds: Double
    var peakRSSKiB: Int
    /// "exit 0", "signal 9", "timeout after 120 s"…
    var status: String
    /// The tool exited 0 and every output file is byte-identical to its source.
    var succeeded: Bool
    /// Every output file is byte-identical to its source.
    var identical: Bool
    /// What went wrong, when something did (exit status and message, or the first difference).
    var problem: String?
    /// What the server sent during the run (both parts, for resume).
    var server: ServerStats
    /// Resume details, in the resume scenario.
    var resume: ResumeDetail?

    var cpuSeconds: Double { userSeconds + systemSeconds }
}

/// The two halves of a resume run.
struct ResumeDetail: Sendable, Codable {
    var firstPartSeconds: Double
    var rerunSeconds: Double
    /// Body bytes the server sent before the first part ended.
    var bytesBeforeInterrupt: Int64
    /// Body bytes the server sent to the rerun.
    var bytesOnRerun: Int64
    /// Everything sent minus the file size: what was fetched twice.
    var refetchedBytes: Int64
    /// False when the tool finished before it could be interrupted.
    var interrupted: Bool
}

/// The outcome of one tool variant in one scenario.
struct ToolResult: Sendable, Codable {
    enum Status: String, Sendable, Codable {
        case ok
        /// At least one run failed (exit status, timeout or a wrong file).
        case failed
        /// The tool is not installed.
        case skipped
        /// The tool cannot do what the scenario asks (e.g. resume).
        case notApplicable = "n/a"
    }

    var variant: String
    var program: String
    var setting: Setting
    var settingsNote: String
    /// The first run's command line (with this run's paths).
    var command: String?
    var status: Status
    var reason: String?
    var warmup: Sample?
    var samples: [Sample] = []
    var summary: ToolSummary?
}

/// Medians over a tool's successful runs.
struct ToolSummary: Sendable, Codable {
    var wall: Statistics
    var megabytesPerSecond: Double
    var cpuSeconds: Double
    /// The largest peak RSS over the runs.
    var peakRSSMiB: Double
    var serverMiB: Double
    /// With several mirrors: the median MiB each one sent, by its label.
    var serverMiBBySource: [String: Double] = [:]
    /// The median number of requests a mirror refused (503), with several mirrors.
    var refused = 0
    var connections: Int
    var failures: Int
    var ratioToIdeal: Double?
    var ratioToFastpull: Double?
    /// Resume only: medians of the rerun time, the bytes before the interrupt and the re-fetched bytes.
    var rerunSeconds: Double?
    var interruptedAtMiB: Double?
    var refetchedMiB: Double?
    /// Resume only: the median rate of the rerun alone (what the server sent it ÷ its time), MB/s.
    var rerunMegabytesPerSecond: Double?

    /// Summarises `samples` for `bytes` per run; nil when no run succeeded.
    init?(samples: [Sample], bytes: Int64, idealSeconds: Double?) {
        let good = samples.filter(\.succeeded)
        guard let wall = Statistics(good.map(\.wallSeconds)) else { return nil }
        self.wall = wall
        megabytesPerSecond = Double(bytes) / wall.median / 1e6
        cpuSeconds = good.map(\.cpuSeconds).median ?? 0
        peakRSSMiB = Double(good.map(\.peakRSSKiB).max() ?? 0) / 1024
        serverMiB = (good.map { Double($0.server.bodyBytes) }.median ?? 0) / 1_048_576
        for label in Set(good.flatMap(\.server.bodyBytesBySource.keys)) {
            let bytes = good.map { Double($0.server.bodyBytesBySource[label] ?? 0) }
            serverMiBBySource[label] = (bytes.median ?? 0) / 1_048_576
        }
        refused = Int((good.map { Double($0.server.refused) }.median ?? 0).rounded())
        connections = Int((good.map { Double($0.server.connections) }.median ?? 0).rounded())
        failures = samples.count - good.count
        ratioToIdeal = idealSeconds.map { wall.median / $0 }
        let resumes = good.compactMap(\.resume)
        if !resumes.isEmpty {
            rerunSeconds = resumes.map(\.rerunSeconds).median
            interruptedAtMiB = resumes.map { Double($0.bytesBeforeInterrupt) / 1_048_576 }.median
            refetchedMiB = resumes.map { Double($0.refetchedBytes) / 1_048_576 }.median
            rerunMegabytesPerSecond =
                resumes.filter { $0.rerunSeconds > 0 }.map { Double($0.bytesOnRerun) / $0.rerunSeconds / 1e6 }
                .median
        }
    }
}

/// Everything measured in one scenario.
struct ScenarioResult: Sendable, Codable {
    var name: String
    var summary: String
    var server: String
    var destination: Destination
    var outputFolder: String
    var fileSize: Int64
    var fileCount: Int
    var totalBytes: Int64
    var tls: Bool
    var idealSeconds: Double?
    var idealNote: String?
    var tools: [ToolResult] = []
    var notes: [String] = []
    /// The timeline chart's file name, when a trace was drawn.
    var timelineChart: String?
    var wallSeconds: Double = 0
}

/// A whole benchmark session, as written to `results.json`.
struct BenchReport: Sendable, Codable {
    var machine: MachineInfo
    var settings: RunSettings
    var scenarios: [ScenarioResult] = []
    /// Session-wide notes: skipped tools, missing options, load.
    var notes: [String] = []
    /// First line of each program's `--version`.
    var toolVersions: [String: String] = [:]
}

/// How the session was run.
struct RunSettings: Sendable, Codable {
    var command: String
    var runs: Int
    var warmupRuns: Int
    var quick: Bool
    var scenarios: [String]
    var tools: [String]
    var fastpullPath: String
    var tmpfsFolder: String
    var diskFolder: String
    /// Where peak RSS came from: "/usr/bin/time" or "wait4 (upper bound)".
    var peakRSSSource: String
}
