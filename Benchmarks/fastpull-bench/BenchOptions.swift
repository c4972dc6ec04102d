import Foundation

/// The command line of `fastpull-bench`.
struct BenchOptions: Sendable {
    var scenarios: [String] = []
    var tools: [String] = []
    var runs = 3
    var runsGiven = false
    var quick = false
    var output = "bench-results"
    var fastpull: String?
    var tmpfs = "/dev/shm"
    var disk: String?
    var list = false
    /// `--timeline TRACE`: only draw this trace file as a timeline chart.
    var timeline: String?

    static let usage = """
        usage: swift run -c release fastpull-bench [options]

        Downloads the same files with fastpull and its peers (aria2c, axel, curl, wget2, a URLSession
        baseline) from nginx and the fixture server on loopback, and writes results.md, results.json and
        SVG charts to the output folder. It measures fastpull as it ships, which it builds (or brings up
        to date) in .build/shipped at the start: swift build -c release --static-swift-stdlib. Install
        the peers with Benchmarks/setup.sh.

          --scenario NAME   run only this scenario (repeatable, or a comma list); see --list
          --tool NAME       run only this tool variant (repeatable, comma list; `aria2c*` for a prefix)
          --runs N          measured runs per tool and scenario, after one discarded warm-up (default 3)
          --quick           small files, 1 run, no warm-up: a smoke run in under two minutes
          --output DIR      where to write the results (default bench-results)
          --fastpull PATH   the fastpull binary (default: the shipped build in .build/shipped)
          --tmpfs DIR       folder on tmpfs for sources and outputs (default /dev/shm)
          --disk DIR        disk folder for loopback-disk outputs (a scratch folder inside it; default: --output)
          --list            list scenarios and tool variants, then exit
          --timeline TRACE  only draw a fastpull --trace file as OUTPUT/timeline-<name>.svg, then exit
          --help            show this help

        """

    /// Parses the arguments (without the program name); throws a message naming the flag.
    static func parse(_ arguments: [String]) throws -> BenchOptions {
        var options = BenchOptions()
        var remaining = arguments[...]
        func list(_ text: String) -> [String] {
            text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        while let argument = remaining.popFirst() {
            // `--flag=value` and `--flag value` are the same.
            var flag = argument
            var inline: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                flag = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            func value() throws -> String {
                if let inline { return inline }
                guard let value = remaining.popFirst(), !value.hasPrefix("--") else {
                    throw BenchError("\(flag) needs a value")
                }
                return value
            }
            func noValue() throws {
                if inline != nil { throw BenchError("\(flag) takes no value") }
            }
            switch flag {
            case "--scenario": options.scenarios += list(try value())
            case "--tool": options.tools += list(try value())
            case "--runs":
                let text = try value()
                guard let runs = Int(text), runs >= 1 else {
                    throw BenchError("--runs: expected a positive number, not \(text)")
                }
                options.runs = runs
                options.runsGiven = true
            case "--quick":
                try noValue()
                options.quick = true
            case "--output": options.output = try value()
            case "--fastpull": options.fastpull = try value()
            case "--tmpfs": options.tmpfs = try value()
            case "--disk": options.disk = try value()
            case "--list":
                try noValue()
                options.list = true
            case "--timeline": options.timeline = try value()
            case "--help", "-h":
                print(usage)
                exit(0)
            default:
                throw BenchError("unknown option \(argument) (see --help)")
            }
        }
        if options.quick && !options.runsGiven { options.runs = 1 }
        for name in options.scenarios where ScenarioTable.named(name) == nil {
            throw BenchError(
                "--scenario: no scenario \(name); choose from "
                    + ScenarioTable.all.map(\.name).joined(separator: ", "))
        }
        let unknown = ToolTable.select(options.tools).unknown
        if !unknown.isEmpty {
            throw BenchError(
                "--tool: no tool variant \(unknown.joined(separator: ", ")); choose from "
                    + ToolTable.all.map(\.name).joined(separator: ", "))
        }
        return options
    }

    /// The scenario and tool tables, for `--list`.
    static var listing: String {
        let width = (ScenarioTable.all.map(\.name.count) + ToolTable.all.map(\.name.count)).max()! + 2
        var lines = ["SCENARIOS"]
        for scenario in ScenarioTable.all {
            lines.append(
                "  \(scenario.name.padding(toLength: width, withPad: " ", startingAt: 0))\(scenario.summary)")
        }
        lines.append("")
        lines.append("TOOL VARIANTS")
        for tool in ToolTable.all {
            let mark = tool.selectedByDefault ? "" : " (only with --tool)"
            lines.append(
                "  \(tool.name.padding(toLength: width, withPad: " ", startingAt: 0))\(tool.setting.rawValue): "
                    + "\(tool.note)\(mark)")
        }
        return lines.joined(separator: "\n")
    }
}
