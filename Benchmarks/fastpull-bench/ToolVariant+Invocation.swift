import Foundation

/// The values that fill a tool's argument templates for one run.
struct RunContext: Sendable {
    var url = ""
    var output = ""
    var outputDirectory = ""
    var outputName = ""
    var caFile = ""
    var urlsFile = ""
    var pairsFile = ""
    var curlConfig = ""
    var trace = ""
    var tls = false
    /// The mirror scenarios: the sources after the first, the file's SHA-256 (hex), the Metalink file,
    /// and the one source a `perMirror` template is expanded for.
    var mirrors: [String] = []
    var sha256 = ""
    var metalink = ""
    var mirror = ""

    /// `template` with every placeholder replaced.
    func expand(_ template: String) -> String {
        guard template.contains("{") else { return template }
        return
            template
            .replacingOccurrences(of: "{url}", with: url)
            .replacingOccurrences(of: "{output}", with: output)
            .replacingOccurrences(of: "{output-dir}", with: outputDirectory)
            .replacingOccurrences(of: "{output-name}", with: outputName)
            .replacingOccurrences(of: "{ca}", with: caFile)
            .replacingOccurrences(of: "{urls}", with: urlsFile)
            .replacingOccurrences(of: "{pairs}", with: pairsFile)
            .replacingOccurrences(of: "{curl-config}", with: curlConfig)
            .replacingOccurrences(of: "{trace}", with: trace)
            .replacingOccurrences(of: "{sha256}", with: sha256)
            .replacingOccurrences(of: "{metalink}", with: metalink)
            .replacingOccurrences(of: "{mirror}", with: mirror)
    }
}

/// Where the programs of the tool table are.
struct ProgramPaths: Sendable {
    /// The fastpull binary under test.
    var fastpull: String
    /// This executable (for the URLSession child mode).
    var bench: String
    /// `--help` output of each program that was asked for it (by program name).
    var helpTexts: [String: String] = [:]

    /// The executable for `program`, or nil when it is not installed.
    func executable(for program: Program) -> String? {
        switch program {
        case .fastpull: findExecutable(fastpull)
        case .urlSession: bench
        case .external(let name): findExecutable(name)
        }
    }
}

/// What a batch run will do: the invocations, and a note when it is a loop instead of a batch mode.
struct BatchPlan: Sendable {
    var invocations: [Invocation]
    var note: String?
}

extension ToolVariant {
    /// The invocation for one file (plus `extra` arguments, e.g. the resume option).
    func singleInvocation(
        executable: String, context: RunContext, extra: [String] = []
    ) -> Invocation {
        var templates = single
        if context.tls, case .arguments(let arguments) = tls { templates = arguments + templates }
        templates = extra + templates
        return Invocation(
            executable: executable, arguments: templates.map(context.expand), environment: environment)
    }

    /// The invocation for one file from several sources (`{url}` and every one of `context.mirrors`),
    /// or why the variant cannot make one.
    func sourcesInvocation(executable: String, context: RunContext) -> Result<Invocation, NotApplicable> {
        switch sources {
        case .arguments(let arguments, let perMirror):
            var expanded = arguments.map(context.expand)
            for mirror in context.mirrors {
                var one = context
                one.mirror = mirror
                expanded += perMirror.map(one.expand)
            }
            return .success(Invocation(executable: executable, arguments: expanded))
        case .firstOnly:
            return .success(singleInvocation(executable: executable, context: context))
        case .unsupported(let why):
            return .failure(NotApplicable(reason: why))
        }
    }

    /// The invocation that downloads what `context.metalink` describes (the one-source reference:
    /// the first source alone), or why the variant cannot.
    func metalinkInvocation(executable: String, context: RunContext) -> Result<Invocation, NotApplicable> {
        if case .firstOnly = sources {
            return .success(singleInvocation(executable: executable, context: context))
        }
        switch metalink {
        case .arguments(let arguments):
            return .success(Invocation(executable: executable, arguments: arguments.map(context.expand)))
        case .unsupported(let why):
            return .failure(NotApplicable(reason: why))
        }
    }

    /// The invocations for a batch of `files` (URL and output path each): the tool's batch mode, or a
    /// loop of single downloads.
    func batchPlan(
        executable: String, context: RunContext, files: [(url: String, output: String)], helpText: String?
    ) -> BatchPlan {
        if case .native(let arguments, let requiredOption) = batch {
            if let requiredOption, !(helpText ?? "").contains(requiredOption) {
                // falls through to the loop below
            } else {
                var single = self
                single.single = arguments
                return BatchPlan(
                    invocations: [single.singleInvocation(executable: executable, context: context)],
                    note: nil)
            }
        }
        let invocations = files.map { file in
            var one = context
            one.url = file.url
            one.output = file.output
            one.outputName = String(file.output.split(separator: "/").last ?? "")
            return singleInvocation(executable: executable, context: one)
        }
        let why =
            if case .native(_, let option?) = batch {
                "no \(option) option yet"
            } else {
                "no batch mode"
            }
        // `.unsupported` never gets here: the session reports it as n/a.
        return BatchPlan(
            invocations: invocations, note: "\(name): \(why), so \(files.count) single downloads in a row")
    }
}

/// Why a tool variant cannot do what a scenario asks; the reason goes into the report as n/a.
struct NotApplicable: Error, Sendable {
    var reason: String
}
