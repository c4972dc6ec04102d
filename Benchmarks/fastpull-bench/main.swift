// fastpull-bench: fastpull against aria2c, axel, curl, wget2 and a URLSession baseline, on loopback, from
// nginx and the fixture server. See Benchmarks/README.md.
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

#if DEBUG
    let isDebugBuild = true
#else
    let isDebugBuild = false
#endif

func fail(_ message: String, code: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("fastpull-bench: \(message)\n".utf8))
    exit(code)
}

let arguments = Array(CommandLine.arguments.dropFirst())
let reportsNothing = ["--help", "--list", "--timeline"].contains { flag in
    arguments.contains { $0 == flag || $0.hasPrefix(flag + "=") }
}
if isDebugBuild && !reportsNothing {
    fail(
        "refusing to run from a debug build: its numbers would mean nothing. "
            + "Build and run in release: swift build -c release && swift run -c release fastpull-bench")
}
if arguments.first == "--urlsession-child" {
    URLSessionBaseline.main(Array(arguments.dropFirst()))
}

let options: BenchOptions
do {
    options = try BenchOptions.parse(arguments)
} catch {
    fail("\(error)")
}
if options.list {
    print(BenchOptions.listing)
    exit(0)
}
if let trace = options.timeline {
    guard let events = TraceFile.read(trace) else {
        fail("\(trace): not a trace file (see Benchmarks/README.md)")
    }
    let name = URL(fileURLWithPath: trace).deletingPathExtension().lastPathComponent
    let path = Workspace.absolute(options.output) + "/timeline-\(name).svg"
    do {
        try FileManager.default.createDirectory(
            atPath: Workspace.absolute(options.output), withIntermediateDirectories: true)
        try TimelineChart.svg(events: events, title: "fastpull: connections over time", subtitle: trace)
            .write(toFile: path, atomically: true, encoding: .utf8)
    } catch {
        fail("cannot write \(path): \(error)", code: 1)
    }
    print(path)
    exit(0)
}

Cleanup.installSignalHandlers()
let workspace: Workspace
let fastpull: String
do {
    workspace = try Workspace(options: options)
    fastpull = try Workspace.fastpullBinary(option: options.fastpull, packageRoot: workspace.packageRoot) {
        FileHandle.standardError.write(Data("fastpull-bench: \($0)\n".utf8))
    }
} catch {
    fail("\(error)")
}

let session = BenchmarkSession(options: options, workspace: workspace, fastpull: fastpull)
let report = session.run()
session.shutdown()
workspace.clean()

do {
    let chartName = "throughput.svg"
    try ThroughputChart.svg(report).write(
        toFile: workspace.results + "/" + chartName, atomically: true, encoding: .utf8)
    let markdown = MarkdownReport.render(report, chart: chartName)
    try markdown.write(toFile: workspace.results + "/results.md", atomically: true, encoding: .utf8)
    try JSONReport.render(report).write(to: URL(fileURLWithPath: workspace.results + "/results.json"))
    print(markdown)
} catch {
    fail("cannot write the results to \(workspace.results): \(error)", code: 1)
}

let fastpullFailures = report.scenarios.flatMap(\.tools).filter {
    $0.program == "fastpull" && $0.status == .failed
}
FileHandle.standardError.write(
    Data("fastpull-bench: wrote results.md, results.json and charts to \(workspace.results)\n".utf8))
if !fastpullFailures.isEmpty {
    fail("fastpull failed in \(fastpullFailures.count) scenario/variant pair(s); see results.md", code: 3)
}
exit(0)
