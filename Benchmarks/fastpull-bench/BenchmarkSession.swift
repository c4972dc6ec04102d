import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs the selected scenarios × tool variants and collects a ``BenchReport``.
///
/// Runs are interleaved: each round runs every tool once, so a burst of background load hits all tools
/// instead of one. The first round is a discarded warm-up (none in `--quick` mode).
final class BenchmarkSession {
    private let options: BenchOptions
    private let scenarios: [Scenario]
    private let variants: [ToolVariant]
    private let workspace: Workspace
    private var programs: ProgramPaths
    private var nginx: NginxServer?
    private var nginxProblem: String?
    private var report: BenchReport
    private let runner: Runner
    private var timelineNoted = false
    /// The shaped link of the scenario running now, whose namespace every tool runs in.
    private var link: ShapedLink?
    /// The digests of the sources the mirror scenarios have needed, by path.
    private var digests: [String: MirrorFiles.Digests] = [:]

    init(options: BenchOptions, workspace: Workspace, fastpull: String) {
        self.options = options
        self.workspace = workspace
        scenarios =
            options.scenarios.isEmpty
            ? ScenarioTable.all : ScenarioTable.all.filter { options.scenarios.contains($0.name) }
        variants = ToolTable.select(options.tools).variants
        programs = ProgramPaths(fastpull: fastpull, bench: Workspace.currentExecutable())
        let runner = Runner(logDirectory: workspace.logs)
        self.runner = runner
        let arguments = CommandLine.arguments.dropFirst().joined(separator: " ")
        report = BenchReport(
            machine: MachineInfo.current(packageRoot: workspace.packageRoot),
            settings: RunSettings(
                command: "swift run -c release fastpull-bench" + (arguments.isEmpty ? "" : " " + arguments),
                runs: options.runs, warmupRuns: options.quick ? 0 : 1, quick: options.quick,
                scenarios: scenarios.map(\.name), tools: variants.map(\.name), fastpullPath: fastpull,
                tmpfsFolder: workspace.root, diskFolder: workspace.diskOutput,
                peakRSSSource: runner.timeProgram == nil ? "wait4 (an upper bound)" : "/usr/bin/time"))
    }

    /// Runs everything and returns the report (servers stopped, scratch files removed).
    func run() -> BenchReport {
        collectVersions()
        if report.machine.loadAtStart > Double(report.machine.cores) / 2 {
            report.notes.append(
                "The machine was busy when the session started (load \(fixed(report.machine.loadAtStart, 1)) "
                    + "on \(report.machine.cores) cores): absolute times are noisy; compare ratios within a "
                    + "scenario.")
        }
        for scenario in scenarios {
            let started = Date()
            var result = runScenario(scenario)
            result.wallSeconds = Date().timeIntervalSince(started)
            report.scenarios.append(result)
        }
        nginx?.stop()
        report.machine.loadAtEnd = MachineInfo.loadAverage()
        return report
    }

    /// Stops servers; called on exit and on SIGINT.
    func shutdown() {
        nginx?.stop()
    }

    // MARK: - Tools

    private func collectVersions() {
        programs.helpTexts["fastpull"] = captureOutput(programs.fastpull, ["--help"], mergeErrors: true) ?? ""
        let versionCommands: [(String, String, [String])] = [
            ("fastpull", programs.fastpull, ["--version"]),
            ("aria2c", "aria2c", ["--version"]),
            ("axel", "axel", ["--version"]),
            ("curl", "curl", ["--version"]),
            ("wget2", "wget2", ["--version"]),
        ]
        let used = Set(variants.map(\.programName))
        for (name, executable, arguments) in versionCommands where used.contains(name) {
            guard findExecutable(executable) != nil else {
                report.notes.append(
                    "\(name) is not installed: its rows are skipped (run Benchmarks/setup.sh).")
                continue
            }
            let text = captureOutput(executable, arguments, mergeErrors: true) ?? ""
            let version = text.split(separator: "\n").first.map(String.init) ?? "unknown"
            // Which binary: the shipped build in .build/shipped, or --fastpull's (inside the package:
            // its path from the package's folder, which says nothing of this machine's layout).
            let root =
                workspace.packageRoot.hasSuffix("/") ? workspace.packageRoot : workspace.packageRoot + "/"
            let shown = executable.hasPrefix(root) ? String(executable.dropFirst(root.count)) : executable
            report.toolVersions[name] = name == "fastpull" ? "\(version) (\(shown))" : version
        }
        if used.contains("URLSession") { report.toolVersions["URLSession"] = report.machine.swift }
        if let nginx = findExecutable("nginx") {
            report.toolVersions["nginx"] = "nginx " + (NginxServer.version(nginx) ?? "unknown")
        }
        if !(programs.helpTexts["fastpull"] ?? "").contains("--trace") {
            report.notes.append(
                "Timeline charts skipped: `fastpull --help` shows no --trace option yet "
                    + "(they appear once it does).")
        }
    }

    // MARK: - Servers

    private func startNginx() -> NginxServer? {
        if let nginx { return nginx }
        if nginxProblem != nil { return nil }
        guard let executable = findExecutable("nginx") ?? findExecutable("/usr/sbin/nginx") else {
            nginxProblem = "nginx is not installed (run Benchmarks/setup.sh)"
            report.notes.append(
                "nginx is not installed: its scenarios are skipped (run Benchmarks/setup.sh).")
            return nil
        }
        var locations: [NginxServer.Location] = []
        for scenario in scenarios {
            if case .nginx(let name, let rate) = scenario.server,
                !locations.contains(where: { $0.name == name })
            {
                locations.append(NginxServer.Location(name: name, rate: rate))
            }
        }
        let server = NginxServer(
            executable: executable, directory: workspace.nginx, documentRoot: workspace.documentRoot,
            locations: locations, certificate: workspace.serverCertificate, key: workspace.serverKey)
        do {
            try server.start()
        } catch {
            nginxProblem = "\(error)"
            report.notes.append("nginx did not start, its scenarios are skipped: \(error)")
            return nil
        }
        nginx = server
        return server
    }

    /// nginx without limits in a new network namespace, its link shaped as `shaping` says.
    private func startShapedNginx(_ scenario: Scenario, _ shaping: Shaping) throws -> (
        NginxServer, ShapedLink
    ) {
        guard let executable = findExecutable("nginx") ?? findExecutable("/usr/sbin/nginx") else {
            throw BenchError("nginx is not installed (run Benchmarks/setup.sh)")
        }
        let link = try ShapedLink()
        let nginx = NginxServer(
            executable: executable, directory: workspace.nginx + "-" + scenario.name,
            documentRoot: workspace.documentRoot, locations: [.init(name: "plain", rate: .unlimited)],
            certificate: workspace.serverCertificate, key: workspace.serverKey,
            commandPrefix: link.namespace.commandPrefix)
        do {
            try nginx.start()
            try link.shape(shaping, serverPort: nginx.port)
        } catch {
            nginx.stop()
            link.remove()
            throw error
        }
        return (nginx, link)
    }

    /// nginx with one server block per mirror (127.0.0.1, .2, .3…) in a new network namespace, each
    /// mirror's connections shaped to its rate; a mirror with a corrupt offset serves copies of
    /// `relativePaths` with that byte flipped, from a folder of its own (removed by the caller).
    private func startShapedMirrors(
        _ scenario: Scenario, _ mirrors: [MirrorSpec], relativePaths: [String]
    ) throws -> (NginxServer, ShapedLink, badCopies: [String]) {
        guard let executable = findExecutable("nginx") ?? findExecutable("/usr/sbin/nginx") else {
            throw BenchError("nginx is not installed (run Benchmarks/setup.sh)")
        }
        var sites: [NginxServer.Site] = []
        var badCopies: [String] = []
        for (index, mirror) in mirrors.enumerated() {
            var root = workspace.documentRoot
            if let offset = mirror.corruptOffset {
                root = workspace.root + "/www-\(scenario.name)-\(mirror.name)"
                badCopies.append(root)
                try FileManager.default.createDirectory(
                    atPath: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
                for path in relativePaths {
                    try MirrorFiles.writeCorruptCopy(
                        of: workspace.documentRoot + "/" + path, to: root + "/" + path, flipping: offset)
                }
            }
            sites.append(
                NginxServer.Site(
                    label: mirror.label, address: "127.0.0.\(index + 1)", documentRoot: root,
                    connectionLimit: mirror.connectionLimit))
        }
        let link = try ShapedLink()
        let nginx = NginxServer(
            executable: executable, directory: workspace.nginx + "-" + scenario.name,
            documentRoot: workspace.documentRoot, locations: [.init(name: "plain", rate: .unlimited)],
            certificate: workspace.serverCertificate, key: workspace.serverKey,
            commandPrefix: link.namespace.commandPrefix, sites: sites)
        do {
            try nginx.start()
            try link.shapeEachConnection(
                zip(nginx.sites, mirrors).map { (port: $0.port, rate: $1.rate, shared: $1.sharedLink) })
        } catch {
            nginx.stop()
            link.remove()
            throw error
        }
        return (nginx, link, badCopies)
    }

    // MARK: - Scenarios

    /// The files of one scenario: URLs, outputs, and the sources to compare them with.
    private struct Files {
        var urls: [String] = []
        var outputs: [String] = []
        var sources: [String] = []
    }

    private func runScenario(_ scenario: Scenario) -> ScenarioResult {
        let quick = options.quick
        let outputFolder = workspace.outputFolder(for: scenario.destination)
        var result = ScenarioResult(
            name: scenario.name, summary: scenario.summary, server: scenario.server.summary,
            destination: scenario.destination, outputFolder: outputFolder,
            fileSize: scenario.fileSize(quick: quick), fileCount: scenario.fileCount(quick: quick),
            totalBytes: scenario.totalBytes(quick: quick), tls: scenario.tls,
            idealSeconds: scenario.ideal?.seconds(for: scenario.totalBytes(quick: quick)),
            idealNote: scenario.ideal?.note)
        let countText = result.fileCount > 1 ? " × \(result.fileCount)" : ""
        log("== \(scenario.name) (\(mebibytes(result.fileSize))\(countText) per run): \(scenario.summary)")

        let relativePaths: [String]
        do {
            relativePaths = try prepareSources(scenario)
        } catch {
            result.notes.append("Skipped: cannot create the source files: \(error)")
            return result
        }

        let server: any BenchServer
        var fixture: FixtureBackend?
        var shaped: NginxServer?
        var objectStore: ObjectStoreBackend?
        var mirrors: (nginx: NginxServer, specs: [MirrorSpec])?
        var badCopies: [String] = []
        let prefix: String
        switch scenario.server {
        case .nginx(let location, _):
            guard let nginx = startNginx() else {
                return skipped(result, because: nginxProblem ?? "nginx is unavailable")
            }
            server = nginx
            prefix = location + "/"
        case .fixture(let totalRate, let perConnectionRate, let ttfb, let stallAfter):
            do {
                let backend = try FixtureBackend(
                    directory: workspace.documentRoot, totalRate: totalRate,
                    perConnectionRate: perConnectionRate,
                    ttfbMilliseconds: ttfb, stallAfter: stallAfter, tls: scenario.tls)
                fixture = backend
                server = backend
            } catch {
                result.notes.append("Skipped: the fixture server did not start: \(error)")
                return result
            }
            prefix = ""
        case .shapedNginx(let shaping):
            do {
                let (nginx, link) = try startShapedNginx(scenario, shaping)
                self.link = link
                shaped = nginx
                server = nginx
            } catch {
                return skipped(result, because: "the shaped link or its nginx did not start: \(error)")
            }
            prefix = "plain/"
        case .objectStore:
            do {
                let store = try ObjectStoreBackend(directory: workspace.documentRoot, files: relativePaths)
                objectStore = store
                server = store
            } catch {
                return skipped(result, because: "the S3 server did not start: \(error)")
            }
            prefix = ""
        case .shapedMirrors(let specs):
            do {
                let (nginx, link, copies) = try startShapedMirrors(
                    scenario, specs, relativePaths: relativePaths)
                self.link = link
                shaped = nginx
                server = nginx
                mirrors = (nginx, specs)
                badCopies = copies
            } catch {
                return skipped(result, because: "the shaped mirrors or their nginx did not start: \(error)")
            }
            prefix = "plain/"
        }
        defer {
            fixture?.stop()
            shaped?.stop()
            objectStore?.stop()
            link?.remove()
            link = nil
            for folder in badCopies { try? FileManager.default.removeItem(atPath: folder) }
        }
        if let nginx, server === nginx {
            // "nginx, sendfile, …" → "nginx 1.22.1, sendfile, …"
            result.server = nginx.summary + scenario.server.summary.dropFirst("nginx".count)
        }
        if scenario.tls { result.server += ", over TLS (sendfile does not apply)" }

        var files = Files()
        for path in relativePaths {
            files.urls.append(
                mirrors.map { $0.nginx.url(for: prefix + path, site: 0) }
                    ?? server.url(for: prefix + path, tls: scenario.tls))
            files.outputs.append(
                outputFolder + "/" + (path.split(separator: "/").last.map(String.init) ?? path))
            files.sources.append(workspace.documentRoot + "/" + path)
        }
        var context: RunContext
        do {
            context = try writeLists(scenario, files: files, outputFolder: outputFolder)
            if let mirrors {
                try describeSources(
                    scenario, nginx: mirrors.nginx, specs: mirrors.specs, path: prefix + relativePaths[0],
                    source: files.sources[0], context: &context)
            }
        } catch {
            result.notes.append("Skipped: cannot write the URL lists: \(error)")
            return result
        }

        result.tools = measureTools(
            scenario, server: server, files: files, context: context, notes: &result.notes)
        if let fastpull = result.tools.first(where: { $0.variant == "fastpull" })?.summary?.wall.median {
            for index in result.tools.indices {
                if let median = result.tools[index].summary?.wall.median {
                    result.tools[index].summary?.ratioToFastpull = median / fastpull
                }
            }
        }
        switch scenario.workload {
        case .singleFile, .severalSources, .metalink:
            result.timelineChart = drawTimeline(scenario, server: server, context: context)
        case .manyFiles, .resume:
            break
        }
        try? emptyDirectory(outputFolder)
        return result
    }

    /// `result` with every tool skipped for `reason`, which its notes say too.
    private func skipped(_ result: ScenarioResult, because reason: String) -> ScenarioResult {
        var result = result
        result.notes.append("Skipped: \(reason).")
        result.tools = variants.map { skippedResult($0, reason: reason) }
        return result
    }

    /// Fills in what the mirror scenarios give a tool besides the first URL: the other mirrors' URLs of
    /// `path`, the SHA-256 of `source`, and a Metalink file that lists every mirror with its priority,
    /// the size and the piece hashes.
    private func describeSources(
        _ scenario: Scenario, nginx: NginxServer, specs: [MirrorSpec], path: String, source: String,
        context: inout RunContext
    ) throws {
        let urls = specs.indices.map { nginx.url(for: path, site: $0) }
        context.mirrors = Array(urls.dropFirst())
        let fileDigests = try digests[source] ?? MirrorFiles.digests(of: source)
        digests[source] = fileDigests
        context.sha256 = fileDigests.sha256
        context.metalink = workspace.lists + "/" + scenario.name + "/" + context.outputName + ".meta4"
        let document = MirrorFiles.metalink(
            name: context.outputName, size: scenario.fileSize(quick: options.quick), digests: fileDigests,
            sources: zip(urls, specs).map { (url: $0, priority: $1.priority) })
        try document.write(toFile: context.metalink, atomically: true, encoding: .utf8)
    }

    /// Creates the scenario's source files; returns their paths relative to the document root.
    private func prepareSources(_ scenario: Scenario) throws -> [String] {
        let size = scenario.fileSize(quick: options.quick)
        switch scenario.workload {
        case .singleFile, .resume, .severalSources, .metalink:
            let name = SourceFiles.singleName(size: size)
            try SourceFiles.ensure(path: workspace.documentRoot + "/" + name, size: size, seed: UInt64(size))
            return [name]
        case .manyFiles:
            let count = scenario.fileCount(quick: options.quick)
            let sizes = scenario.fileSizes(quick: options.quick)
            let folder =
                sizes == nil
                ? SourceFiles.batchFolder(count: count, size: size)
                : "\(scenario.name)-\(options.quick ? "quick" : "full")"
            let directory = workspace.documentRoot + "/" + folder
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            return try (0..<count).map { index in
                let name = SourceFiles.batchName(index: index)
                try SourceFiles.ensure(
                    path: directory + "/" + name, size: sizes?[index] ?? size, seed: UInt64(10_000 + index))
                return folder + "/" + name
            }
        }
    }

    /// Writes the URL list, the `URL output` list and the curl config; returns the template values.
    private func writeLists(_ scenario: Scenario, files: Files, outputFolder: String) throws -> RunContext {
        let folder = workspace.lists + "/" + scenario.name
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var context = RunContext()
        context.url = files.urls[0]
        context.output = files.outputs[0]
        context.outputDirectory = outputFolder
        context.outputName = String(files.outputs[0].split(separator: "/").last ?? "")
        context.caFile = workspace.caFile
        context.tls = scenario.tls
        context.urlsFile = folder + "/urls.txt"
        context.pairsFile = folder + "/pairs.txt"
        context.curlConfig = folder + "/curl.cfg"
        try (files.urls.joined(separator: "\n") + "\n").write(
            toFile: context.urlsFile, atomically: true, encoding: .utf8)
        try zip(files.urls, files.outputs).map { "\($0) \($1)\n" }.joined().write(
            toFile: context.pairsFile, atomically: true, encoding: .utf8)
        try files.urls.map { "url = \"\($0)\"\n" }.joined().write(
            toFile: context.curlConfig, atomically: true, encoding: .utf8)
        return context
    }

    // MARK: - Measuring

    /// A tool variant ready to run in one scenario.
    private struct Contender {
        var variant: ToolVariant
        var executable: String
        var invocations: [Invocation]
        var rerun: [Invocation] = []
        var result: ToolResult
        var gaveUp = false
    }

    private func skippedResult(_ variant: ToolVariant, reason: String, status: ToolResult.Status = .skipped)
        -> ToolResult
    {
        ToolResult(
            variant: variant.name, program: variant.programName, setting: variant.setting,
            settingsNote: variant.note, status: status, reason: reason)
    }

    private func measureTools(
        _ scenario: Scenario, server: any BenchServer, files: Files, context: RunContext,
        notes: inout [String]
    ) -> [ToolResult] {
        var contenders: [Contender] = []
        var results: [String: ToolResult] = [:]
        for variant in variants where !variant.onlyWithSeveralSources || scenario.workload.hasSeveralSources {
            guard let executable = programs.executable(for: variant.program) else {
                results[variant.name] = skippedResult(
                    variant, reason: "\(variant.programName) is not installed (run Benchmarks/setup.sh)")
                continue
            }
            var contender = Contender(
                variant: variant, executable: executable, invocations: [],
                result: skippedResult(variant, reason: "", status: .ok))
            contender.result.reason = nil
            if scenario.tls, case .unsupported(let why) = variant.tls {
                results[variant.name] = skippedResult(variant, reason: why, status: .notApplicable)
                continue
            }
            if scenario.reader != nil, let why = variant.noOrderedOutput {
                results[variant.name] = skippedResult(variant, reason: why, status: .notApplicable)
                continue
            }
            switch scenario.workload {
            case .singleFile, .severalSources, .metalink:
                switch oneFileInvocation(variant, executable: executable, scenario, context: context) {
                case .success(let invocation):
                    contender.invocations = [invocation]
                case .failure(let notApplicable):
                    results[variant.name] = skippedResult(
                        variant, reason: notApplicable.reason, status: .notApplicable)
                    continue
                }
            case .manyFiles:
                if case .unsupported(let why) = variant.batch {
                    results[variant.name] = skippedResult(variant, reason: why, status: .notApplicable)
                    continue
                }
                let plan = variant.batchPlan(
                    executable: executable, context: context,
                    files: zip(files.urls, files.outputs).map { (url: $0, output: $1) },
                    helpText: programs.helpTexts[variant.programName])
                contender.invocations = plan.invocations
                if let note = plan.note { notes.append(note) }
            case .resume:
                guard case .rerun(let extra) = variant.resume else {
                    if case .unsupported(let why) = variant.resume {
                        results[variant.name] = skippedResult(variant, reason: why, status: .notApplicable)
                    }
                    continue
                }
                contender.invocations = [variant.singleInvocation(executable: executable, context: context)]
                contender.rerun = [
                    variant.singleInvocation(executable: executable, context: context, extra: extra)
                ]
            }
            if let reader = scenario.reader, let output = files.outputs.first {
                contender.invocations = contender.invocations.map { reader.wrap($0, output: output) }
            }
            if let link {
                contender.invocations = contender.invocations.map(link.inside)
                contender.rerun = contender.rerun.map(link.inside)
            }
            let first = contender.invocations[0].commandLine
            contender.result.command =
                contender.invocations.count > 1 ? "\(first)  (× \(contender.invocations.count))" : first
            contenders.append(contender)
        }

        let warmups = options.quick ? 0 : 1
        let rounds = warmups + options.runs
        for round in 0..<rounds {
            for index in contenders.indices where !contenders[index].gaveUp {
                let label = round < warmups ? "warm-up" : "run \(round - warmups + 1)/\(options.runs)"
                let sample = measure(scenario, contenders[index], server: server, files: files)
                log(describe(contenders[index].variant.name, label, sample))
                if round < warmups {
                    contenders[index].result.warmup = sample
                } else {
                    contenders[index].result.samples.append(sample)
                }
                if sample.status.hasPrefix("timeout") {
                    contenders[index].gaveUp = true
                    notes.append(
                        "\(contenders[index].variant.name) timed out after \(Int(timeout(scenario))) s; "
                            + "its remaining runs were skipped.")
                    if contenders[index].result.samples.isEmpty {
                        contenders[index].result.samples.append(sample)
                    }
                }
            }
        }
        let ideal = scenario.ideal?.seconds(for: scenario.totalBytes(quick: options.quick))
        for var contender in contenders {
            let samples = contender.result.samples
            contender.result.summary = ToolSummary(
                samples: samples, bytes: scenario.totalBytes(quick: options.quick), idealSeconds: ideal)
            if let failed = samples.first(where: { !$0.succeeded }) {
                contender.result.status = .failed
                contender.result.reason = failed.problem
            }
            results[contender.variant.name] = contender.result
        }
        return variants.compactMap { results[$0.name] }
    }

    /// The invocation of `variant` for one file in `scenario`: from its URL, from every mirror with the
    /// file's checksum, or from the Metalink file; or why it cannot.
    private func oneFileInvocation(
        _ variant: ToolVariant, executable: String, _ scenario: Scenario, context: RunContext
    ) -> Result<Invocation, NotApplicable> {
        var extra: [String] = []
        if let rate = scenario.clientRate {
            guard let arguments = variant.rateLimit(rate) else {
                return .failure(NotApplicable(reason: "no option to limit its own rate"))
            }
            extra = arguments
        }
        let invocation: Result<Invocation, NotApplicable> =
            switch scenario.workload {
            case .severalSources: variant.sourcesInvocation(executable: executable, context: context)
            case .metalink: variant.metalinkInvocation(executable: executable, context: context)
            case .singleFile, .manyFiles, .resume:
                .success(variant.singleInvocation(executable: executable, context: context))
            }
        return invocation.map { invocation in
            var limited = invocation
            limited.arguments = extra + invocation.arguments
            return limited
        }
    }

    private func describe(_ name: String, _ label: String, _ sample: Sample) -> String {
        var line =
            "  "
            + name.padding(
                toLength: max(14, variants.map(\.name.count).max() ?? 0), withPad: " ", startingAt: 0)
            + " "
            + label.padding(toLength: 8, withPad: " ", startingAt: 0)
            + "  \(fixed(sample.wallSeconds, 2)) s  cpu \(fixed(sample.cpuSeconds, 2)) s"
            + "  rss \(fixed(Double(sample.peakRSSKiB) / 1024, 0)) MiB"
            + "  server \(fixed(Double(sample.server.bodyBytes) / 1_048_576, 1)) MiB"
            + "  " + (sample.succeeded ? "ok" : "FAIL: \(sample.problem ?? sample.status)")
        if !sample.server.bodyBytesBySource.isEmpty {
            line +=
                "  ("
                + sample.server.bodyBytesBySource.sorted { $0.key < $1.key }.map {
                    "\($0.key): \(fixed(Double($0.value) / 1_048_576, 1)) MiB"
                }.joined(separator: ", ")
                + (sample.server.refused > 0 ? "; \(sample.server.refused) × 503" : "")
                + ")"
        }
        if let resume = sample.resume {
            line +=
                "  (interrupted at \(fixed(Double(resume.bytesBeforeInterrupt) / 1_048_576, 1)) MiB, "
                + "re-fetched \(fixed(Double(resume.refetchedBytes) / 1_048_576, 1)) MiB)"
        }
        return line
    }

    private func measure(_ scenario: Scenario, _ contender: Contender, server: any BenchServer, files: Files)
        -> Sample
    {
        let outputFolder = workspace.outputFolder(for: scenario.destination)
        do {
            try emptyDirectory(outputFolder)
            if scenario.restartServerEachRun, let nginx, server === nginx { try nginx.restart() }
            try server.beginRun()
        } catch {
            return Sample(
                wallSeconds: 0, userSeconds: 0, systemSeconds: 0, peakRSSKiB: 0, status: "not started",
                succeeded: false, identical: false, problem: "\(error)", server: ServerStats())
        }
        defer { try? emptyDirectory(outputFolder) }

        if case .resume(let fraction) = scenario.workload {
            return measureResume(scenario, contender, server: server, files: files, fraction: fraction)
        }
        let outcome = runner.run(contender.invocations, timeout: timeout(scenario))
        let stats = server.endRun()
        // `/dev/null` keeps nothing to compare.
        let compared = scenario.reader?.keepsTheFile ?? true ? files : Files()
        return sample(outcome, stats: stats, files: compared)
    }

    /// The scenario's time limit for one run (30 s at most in `--quick` mode, where files are small).
    private func timeout(_ scenario: Scenario) -> Double {
        options.quick ? min(scenario.timeoutSeconds, 30) : scenario.timeoutSeconds
    }

    private func sample(_ outcome: RunOutcome, stats: ServerStats, files: Files) -> Sample {
        var problem: String? = nil
        var identical = false
        if outcome.succeeded {
            identical = true
            for (output, source) in zip(files.outputs, files.sources) {
                if let difference = SourceFiles.difference(output: output, source: source) {
                    identical = false
                    problem = "wrong file: \(output.split(separator: "/").last ?? ""): \(difference)"
                    break
                }
            }
        } else {
            problem = outcome.status + (outcome.errorTail.map { ": \($0)" } ?? "")
        }
        return Sample(
            wallSeconds: outcome.wallSeconds, userSeconds: outcome.userSeconds,
            systemSeconds: outcome.systemSeconds,
            peakRSSKiB: outcome.peakRSSKiB, status: outcome.status, succeeded: outcome.succeeded && identical,
            identical: identical, problem: problem, server: stats)
    }

    /// Interrupts the first run with SIGINT once the server has sent `fraction` of the file, then runs
    /// the resume command and checks the result.
    private func measureResume(
        _ scenario: Scenario, _ contender: Contender, server: any BenchServer, files: Files, fraction: Double
    ) -> Sample {
        let threshold = Int64(Double(scenario.fileSize(quick: options.quick)) * fraction)
        let started = Date()
        let interruptAfter = scenario.interruptAfter(quick: options.quick)
        let first = runner.run(contender.invocations, timeout: timeout(scenario)) {
            if let seconds = interruptAfter {
                return Date().timeIntervalSince(started) >= seconds
            }
            return (server.liveBodyBytes ?? 0) >= threshold
        }
        let before = server.endRun()
        if !first.interrupted && first.succeeded {
            var finished = sample(first, stats: before, files: files)
            finished.succeeded = false
            finished.problem = "finished before the interrupt: nothing to resume"
            return finished
        }
        if !first.interrupted && !first.succeeded {
            var failed = sample(first, stats: before, files: files)
            failed.problem = "first part failed before the interrupt: \(failed.problem ?? first.status)"
            return failed
        }
        try? server.beginRun()
        let second = runner.run(contender.rerun, timeout: timeout(scenario))
        let after = server.endRun()
        var combined = second
        combined.wallSeconds += first.wallSeconds
        combined.userSeconds += first.userSeconds
        combined.systemSeconds += first.systemSeconds
        combined.peakRSSKiB = max(first.peakRSSKiB, second.peakRSSKiB)
        var result = sample(combined, stats: before + after, files: files)
        result.resume = ResumeDetail(
            firstPartSeconds: first.wallSeconds, rerunSeconds: second.wallSeconds,
            bytesBeforeInterrupt: before.bodyBytes, bytesOnRerun: after.bodyBytes,
            refetchedBytes: before.bodyBytes + after.bodyBytes - scenario.fileSize(quick: options.quick),
            interrupted: first.interrupted)
        return result
    }

    // MARK: - Timeline

    /// One extra, unmeasured fastpull run with `--trace`, drawn as `timeline-<scenario>.svg`.
    private func drawTimeline(_ scenario: Scenario, server: any BenchServer, context: RunContext) -> String? {
        guard let variant = variants.first(where: { $0.program == .fastpull && $0.trace != nil }),
            let trace = variant.trace, (programs.helpTexts["fastpull"] ?? "").contains(trace.requiresOption),
            let executable = programs.executable(for: .fastpull)
        else { return nil }
        var traced = context
        traced.trace = workspace.traces + "/\(scenario.name).trace"
        guard
            case .success(var invocation) = oneFileInvocation(
                variant, executable: executable, scenario, context: traced)
        else { return nil }
        invocation.arguments = trace.arguments.map(traced.expand) + invocation.arguments
        if let link { invocation = link.inside(invocation) }
        let outputFolder = workspace.outputFolder(for: scenario.destination)
        try? emptyDirectory(outputFolder)
        if scenario.restartServerEachRun, let nginx, server === nginx { try? nginx.restart() }
        try? server.beginRun()
        let outcome = runner.run([invocation], timeout: timeout(scenario))
        _ = server.endRun()
        guard outcome.succeeded, let events = TraceFile.read(traced.trace), !events.isEmpty else {
            log("  timeline: the traced fastpull run gave no usable trace (\(outcome.status))")
            return nil
        }
        let name = "timeline-\(scenario.name).svg"
        let svg = TimelineChart.svg(
            events: events, title: "fastpull \(scenario.name): connections over time",
            subtitle: "\(invocation.commandLine.replacingOccurrences(of: workspace.root, with: "…"))")
        do {
            try svg.write(toFile: workspace.results + "/" + name, atomically: true, encoding: .utf8)
        } catch {
            log("  timeline: cannot write \(name): \(error)")
            return nil
        }
        // The trace itself, beside its chart, for a closer look (each connection's windows, the
        // connection count's decisions with their reasons).
        let kept = workspace.results + "/timeline-\(scenario.name).trace"
        try? FileManager.default.removeItem(atPath: kept)
        try? FileManager.default.copyItem(atPath: traced.trace, toPath: kept)
        return name
    }

    private func log(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
