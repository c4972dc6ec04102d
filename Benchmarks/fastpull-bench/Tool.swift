/// How a tool is told to trust the test CA of the HTTPS scenarios.
enum TLSMode: Sendable {
    /// Extra arguments for HTTPS runs.
    case arguments([String])
    /// The tool cannot trust a test CA; the reason goes into the report.
    case unsupported(String)
}

/// Which program a tool variant runs.
enum Program: Sendable, Equatable {
    /// The `fastpull` binary under test (`--fastpull PATH`).
    case fastpull
    /// This executable in its URLSession-baseline child mode.
    case urlSession
    /// A peer found in `PATH`.
    case external(String)
}

/// Whether a variant uses the tool's defaults or the settings known to be its best.
enum Setting: String, Sendable, Codable {
    case `default`
    case best
}

/// How a tool downloads many files.
enum BatchMode: Sendable {
    /// One invocation with these arguments. When `requiresOption` is set and the tool's `--help` does not
    /// mention it, the harness loops over single downloads instead (and says so).
    case native([String], requiresOption: String? = nil)
    /// The tool has no batch mode: one single-file invocation per file, one after another.
    case loop
    /// Not run in batch scenarios; the reason goes into the report.
    case unsupported(String)
}

/// How a tool continues an interrupted download.
enum ResumeMode: Sendable {
    /// Run the single-file command again with these extra arguments.
    case rerun([String])
    /// The tool cannot resume; the reason goes into the report.
    case unsupported(String)
}

/// How a tool takes several sources of one file, with the file's SHA-256 to verify it.
enum SourcesMode: Sendable {
    /// `arguments` (with `{url}`, the first source, and `{sha256}`), then `perMirror` once for each
    /// further source (`{mirror}`).
    case arguments([String], perMirror: [String])
    /// The single-file arguments with the first source only: a one-source reference.
    case firstOnly
    /// The tool cannot; the reason goes into the report.
    case unsupported(String)
}

/// How a tool downloads what a Metalink file describes.
enum MetalinkMode: Sendable {
    /// These arguments (`{metalink}` is the file, `{output-dir}` where its files go).
    case arguments([String])
    /// The tool cannot; the reason goes into the report.
    case unsupported(String)
}

/// One row of the tool table: a program and the arguments it gets in each kind of run.
///
/// Arguments are templates; the runner replaces these placeholders:
/// `{url}`, `{output}` (file path), `{output-dir}`, `{output-name}`, `{ca}` (CA file for HTTPS),
/// `{urls}` (file with one URL per line), `{pairs}` (lines `URL output-path`),
/// `{curl-config}` (a curl `-K` file of `url = "…"` lines), `{trace}` (trace file path), and in the
/// mirror scenarios `{sha256}` (the file's digest, hex), `{mirror}` (one further source) and `{metalink}`
/// (the Metalink file).
struct ToolVariant: Sendable {
    /// The name used with `--tool` and in the report.
    var name: String
    var program: Program
    var setting: Setting
    /// Why these settings, for the report.
    var note: String
    /// Arguments for one file.
    var single: [String]
    /// How HTTPS runs trust the test CA.
    var tls: TLSMode
    var batch: BatchMode
    var resume: ResumeMode
    /// Extra arguments that make the tool write a per-connection trace, and the `--help` text that
    /// shows the option exists.
    var trace: (arguments: [String], requiresOption: String)? = nil
    /// Run when no `--tool` is given.
    var selectedByDefault = true
    /// How it takes several sources of one file (the `mirrors` scenario).
    var sources = SourcesMode.unsupported("no way to name several sources of one file")
    /// How it reads a Metalink file (`mirrors-metalink`).
    var metalink = MetalinkMode.unsupported("no Metalink support")
    /// Only in the scenarios with several sources (no row elsewhere): a variant that means something
    /// only there.
    var onlyWithSeveralSources = false
    /// Why it cannot hand a file to an ordered reader (standard output, `/dev/null`, a FIFO); nil
    /// when it can.
    var noOrderedOutput: String? = nil
    /// Environment entries its runs get.
    var environment: [String: String] = [:]

    /// The arguments that cap its own download rate at `bytesPerSecond` (curl's `--limit-rate`), or
    /// nil when it has none.
    func rateLimit(_ bytesPerSecond: Int) -> [String]? {
        switch programName {
        case "fastpull", "curl": ["--limit-rate", "\(bytesPerSecond)"]
        case "aria2c": ["--max-download-limit=\(bytesPerSecond)"]
        case "axel": ["-s", "\(bytesPerSecond)"]
        case "wget2": ["--limit-rate=\(bytesPerSecond)"]
        default: nil
        }
    }

    /// The executable name shown in the report.
    var programName: String {
        switch program {
        case .fastpull: "fastpull"
        case .urlSession: "URLSession"
        case .external(let name): name
        }
    }
}

/// FoundationNetworking on Linux trusts only the system CA bundle (it sets libcurl's CAINFO itself, and
/// the environment override exists only in debug builds of Foundation), and has no server-trust
/// challenge: a test CA cannot be trusted without changing the machine.
private let aria2Ordered = "aria2c writes only files it names (no standard output, no FIFO)"
private let axelOrdered = "axel writes only files it names, with a state file beside them"
private let urlSessionOrdered = "the baseline writes with pwrite into a file it names"

private let urlSessionTLS =
    "FoundationNetworking trusts only the system CA bundle; the test CA cannot be added without changing the machine"

private let curlSources = "one URL is one file to curl: it has no mirrors"
private let curlMetalink = "curl removed its Metalink support in 7.78.0"
private let wget2Sources = "several URLs are several files to wget2: it has no mirrors on its command line"
/// Tried by hand with wget2 1.99.1 on this scenario's servers.
private let wget2Metalink =
    "wget2 1.99.1 follows a Metalink a server sends; given the file (--force-metalink -i FILE) it "
    + "ignored -P, fetched from the first URL only and fetched the bad piece again and again (54 MiB of a "
    + "32 MiB file in 60 s, nothing saved)"

extension SourcesMode {
    /// fastpull with `extra` options: the first URL, `--mirror` for each further one, `--checksum`.
    static func fastpull(_ extra: [String]) -> SourcesMode {
        .arguments(
            ["-q"] + extra + ["-o", "{output}", "--checksum", "sha256={sha256}", "{url}"],
            perMirror: ["--mirror", "{mirror}"])
    }

    /// aria2c with `extra` options: every URL on the command line (several URIs are sources of one
    /// file to it) and `--checksum`, which it checks once the file is complete.
    static func aria2c(_ extra: [String]) -> SourcesMode {
        .arguments(
            ["-q"] + extra + [
                "--checksum=sha-256={sha256}", "-d", "{output-dir}", "-o", "{output-name}", "{url}",
            ],
            perMirror: ["{mirror}"])
    }
}

extension MetalinkMode {
    /// fastpull with `extra` options: `--metalink FILE`, saved into the output folder under the
    /// Metalink's name.
    static func fastpull(_ extra: [String]) -> MetalinkMode {
        .arguments(["-q"] + extra + ["-d", "{output-dir}", "--metalink", "{metalink}"])
    }

    /// aria2c with `extra` options: `-M FILE`; it checks each piece as it arrives
    /// (`--realtime-chunk-checksum`, on by default).
    static func aria2c(_ extra: [String]) -> MetalinkMode {
        .arguments(["-q"] + extra + ["-d", "{output-dir}", "-M", "{metalink}"])
    }
}

/// Every tool variant the harness knows. Each external tool appears with its default settings and, where
/// it has tuning options, with its known best ones.
enum ToolTable {
    static let all: [ToolVariant] = [
        ToolVariant(
            name: "fastpull", program: .fastpull, setting: .default,
            note: "defaults (-n auto, up to 64 connections)",
            single: ["-q", "-o", "{output}", "{url}"], tls: .arguments(["--cacert", "{ca}"]),
            batch: .native(["-q", "-i", "{pairs}"], requiresOption: "--input-file"),
            resume: .rerun([]), trace: (["--trace", "{trace}"], "--trace"),
            sources: .fastpull([]), metalink: .fastpull([])),
        ToolVariant(
            name: "fastpull-one-source", program: .fastpull, setting: .default,
            note:
                "defaults, the first mirror's URL only (A): the one-source reference of the mirror scenarios",
            single: ["-q", "-o", "{output}", "{url}"], tls: .arguments(["--cacert", "{ca}"]),
            batch: .unsupported("a reference for the mirror scenarios only"),
            resume: .unsupported("a reference for the mirror scenarios only"), sources: .firstOnly,
            metalink: .unsupported("a reference for the mirror scenarios only"), onlyWithSeveralSources: true),
        ToolVariant.fastpullPipelining(.on),
        ToolVariant.fastpullPipelining(.off),
        ToolVariant(
            name: "fastpull-rules", program: .fastpull, setting: .default,
            note: "defaults under the measured connection rules the stated model replaces "
                + "(FASTPULL_CONNECTION_POLICY=rules); only with --tool",
            single: ["-q", "-o", "{output}", "{url}"], tls: .arguments(["--cacert", "{ca}"]),
            batch: .native(["-q", "-i", "{pairs}"], requiresOption: "--input-file"),
            resume: .rerun([]), selectedByDefault: false, environment: ["FASTPULL_CONNECTION_POLICY": "rules"]
        ),
        ToolVariant.fastpullFixed(4),
        ToolVariant.fastpullFixed(8),
        ToolVariant.fastpullFixed(32),
        ToolVariant.fastpullFixed(64),
        ToolVariant(
            name: "fastpull-n16", program: .fastpull, setting: .best,
            note: "-n 16",
            single: ["-q", "-n", "16", "-o", "{output}", "{url}"], tls: .arguments(["--cacert", "{ca}"]),
            batch: .native(["-q", "-n", "16", "-i", "{pairs}"], requiresOption: "--input-file"),
            resume: .rerun([]), sources: .fastpull(["-n", "16"]), metalink: .fastpull(["-n", "16"])),
        ToolVariant(
            name: "fastpull-named", program: .fastpull, setting: .default,
            note: "defaults; a batch into a folder, each file named by the server as a user's `-d DIR -i "
                + "URLS` is (the probe that names a file is its GET); only with --tool",
            single: ["-q", "-o", "{output}", "{url}"], tls: .arguments(["--cacert", "{ca}"]),
            batch: .native(["-q", "-d", "{output-dir}", "-i", "{urls}"], requiresOption: "--input-file"),
            resume: .unsupported("the batch path of a folder only; the fastpull row resumes"),
            selectedByDefault: false),
        ToolVariant(
            name: "fastpull-j16", program: .fastpull, setting: .best,
            note: "-j 16: sixteen files at a time, as curl-p16 has; only with --tool",
            single: ["-q", "-o", "{output}", "{url}"], tls: .arguments(["--cacert", "{ca}"]),
            batch: .native(["-q", "-j", "16", "-i", "{pairs}"], requiresOption: "--input-file"),
            resume: .unsupported("a batch setting; the fastpull row resumes"),
            selectedByDefault: false),
        ToolVariant(
            name: "aria2c", program: .external("aria2c"), setting: .default,
            note: "defaults (1 connection per file, -j 5 files at a time; with several URIs -s 5 and one "
                + "connection per host, so one to each mirror)",
            single: ["-q", "-d", "{output-dir}", "-o", "{output-name}", "{url}"],
            tls: .arguments(["--ca-certificate={ca}"]),
            batch: .native(["-q", "-d", "{output-dir}", "-i", "{urls}"]),
            resume: .rerun(["-c"]), sources: .aria2c([]), metalink: .aria2c([]), noOrderedOutput: aria2Ordered
        ),
        ToolVariant(
            name: "aria2c-x16", program: .external("aria2c"), setting: .best,
            note: "-x16 -s16 -k1M (its documented maximum split; -j16 in batches)",
            single: ["-q", "-x16", "-s16", "-k1M", "-d", "{output-dir}", "-o", "{output-name}", "{url}"],
            tls: .arguments(["--ca-certificate={ca}"]),
            batch: .native(["-q", "-x16", "-s16", "-k1M", "-j16", "-d", "{output-dir}", "-i", "{urls}"]),
            resume: .rerun(["-c"]), sources: .aria2c(["-x16", "-s16", "-k1M"]),
            metalink: .aria2c(["-x16", "-s16", "-k1M"]), noOrderedOutput: aria2Ordered),
        ToolVariant(
            name: "aria2c-mirrors", program: .external("aria2c"), setting: .best,
            note: "-x4 -s12 -k1M: 12 connections, which aria2c spreads over the URIs, at most 4 to one host "
                + "(the mirrors' limit); only in the mirror scenarios",
            single: ["-q", "-x4", "-s12", "-k1M", "-d", "{output-dir}", "-o", "{output-name}", "{url}"],
            tls: .arguments(["--ca-certificate={ca}"]),
            batch: .unsupported("a setting for the mirror scenarios only"),
            resume: .unsupported("a setting for the mirror scenarios only"),
            sources: .aria2c(["-x4", "-s12", "-k1M"]), metalink: .aria2c(["-x4", "-s12", "-k1M"]),
            onlyWithSeveralSources: true, noOrderedOutput: aria2Ordered),
        ToolVariant(
            name: "axel", program: .external("axel"), setting: .default,
            note: "defaults (4 connections); no CA option, so --insecure for HTTPS; no batch mode; several "
                + "URLs are mirrors of one file to it, but it has no checksum option",
            single: ["-q", "-o", "{output}", "{url}"], tls: .arguments(["--insecure"]),
            batch: .loop, resume: .rerun([]),
            sources: .arguments(["-q", "-o", "{output}", "{url}"], perMirror: ["{mirror}"]),
            noOrderedOutput: axelOrdered),
        ToolVariant(
            name: "axel-n16", program: .external("axel"), setting: .best,
            note: "-n 16; --insecure for HTTPS; no batch mode",
            single: ["-q", "-n", "16", "-o", "{output}", "{url}"], tls: .arguments(["--insecure"]),
            batch: .unsupported(
                "axel has no batch mode; the loop of single downloads is measured once, in the axel row"),
            resume: .rerun([]),
            sources: .arguments(["-q", "-n", "16", "-o", "{output}", "{url}"], perMirror: ["{mirror}"]),
            noOrderedOutput: axelOrdered),
        ToolVariant(
            name: "curl", program: .external("curl"), setting: .default,
            note: "one connection; --parallel (up to 50 transfers) for batches; -C - to resume",
            single: ["-s", "-S", "-f", "-o", "{output}", "{url}"], tls: .arguments(["--cacert", "{ca}"]),
            batch: .native([
                "-s", "-S", "-f", "--parallel", "--remote-name-all", "--output-dir", "{output-dir}", "-K",
                "{curl-config}",
            ]),
            resume: .rerun(["-C", "-"]), sources: .unsupported(curlSources),
            metalink: .unsupported(curlMetalink)),
        ToolVariant(
            name: "curl-p16", program: .external("curl"), setting: .best,
            note: "--parallel --parallel-max 16 for batches (only with --tool)",
            single: ["-s", "-S", "-f", "-o", "{output}", "{url}"], tls: .arguments(["--cacert", "{ca}"]),
            batch: .native([
                "-s", "-S", "-f", "--parallel", "--parallel-max", "16", "--remote-name-all", "--output-dir",
                "{output-dir}", "-K", "{curl-config}",
            ]),
            resume: .rerun(["-C", "-"]), selectedByDefault: false, sources: .unsupported(curlSources),
            metalink: .unsupported(curlMetalink)),
        ToolVariant(
            name: "wget2", program: .external("wget2"), setting: .default,
            note: "defaults (one connection per file, 5 threads for batches)",
            single: ["-q", "-O", "{output}", "{url}"], tls: .arguments(["--ca-certificate={ca}"]),
            batch: .native(["-q", "-P", "{output-dir}", "-i", "{urls}"]),
            resume: .rerun(["-c"]), sources: .unsupported(wget2Sources), metalink: .unsupported(wget2Metalink)
        ),
        ToolVariant(
            name: "wget2-chunked", program: .external("wget2"), setting: .best,
            note: "--chunk-size=1M --max-threads=16 (its documented way to split a file; wget2 1.99.1 still "
                + "fetches one file's chunks one after another)",
            single: ["-q", "--chunk-size=1M", "--max-threads=16", "-O", "{output}", "{url}"],
            tls: .arguments(["--ca-certificate={ca}"]),
            batch: .native(["-q", "--max-threads=16", "-P", "{output-dir}", "-i", "{urls}"]),
            resume: .rerun(["-c"]), sources: .unsupported(wget2Sources), metalink: .unsupported(wget2Metalink)
        ),
        ToolVariant(
            name: "urlsession", program: .urlSession, setting: .best,
            note: "FoundationNetworking URLSession written in this harness: 16 range tasks on one "
                + "session, delegate streaming into pwrite",
            single: ["--urlsession-child", "--url", "{url}", "--output", "{output}", "--segments", "16"],
            tls: .unsupported(urlSessionTLS),
            batch: .native([
                "--urlsession-child", "--batch", "{urls}", "--output-dir", "{output-dir}", "--segments", "16",
            ]),
            resume: .unsupported("the baseline keeps no state between runs"),
            noOrderedOutput: urlSessionOrdered),
        ToolVariant(
            name: "urlsession-1", program: .urlSession, setting: .default,
            note: "URLSession with one plain data task (run with --tool urlsession-1)",
            single: ["--urlsession-child", "--url", "{url}", "--output", "{output}", "--segments", "1"],
            tls: .unsupported(urlSessionTLS),
            batch: .native([
                "--urlsession-child", "--batch", "{urls}", "--output-dir", "{output-dir}", "--segments", "1",
            ]),
            resume: .unsupported("the baseline keeps no state between runs"), selectedByDefault: false,
            noOrderedOutput: urlSessionOrdered),
    ]

    /// The variants `names` select: exact variant names, or a prefix ending in `*` (`aria2c*`). With no
    /// names, every variant that is selected by default.
    static func select(_ names: [String]) -> (variants: [ToolVariant], unknown: [String]) {
        guard !names.isEmpty else { return (all.filter(\.selectedByDefault), []) }
        var unknown: [String] = []
        var chosen = Set<String>()
        for name in names {
            let matches =
                name.hasSuffix("*")
                ? all.filter { $0.name.hasPrefix(name.dropLast()) } : all.filter { $0.name == name }
            if matches.isEmpty { unknown.append(name) }
            chosen.formUnion(matches.map(\.name))
        }
        return (all.filter { chosen.contains($0.name) }, unknown)
    }
}

extension ToolVariant {
    /// fastpull with `-n count`: the fixed counts the default is held against (the best of them is
    /// the oracle for a scenario). Only with `--tool`; `fastpull-n16` is in the default set.
    static func fastpullFixed(_ count: Int) -> ToolVariant {
        ToolVariant(
            name: "fastpull-n\(count)", program: .fastpull, setting: .best, note: "-n \(count)",
            single: ["-q", "-n", "\(count)", "-o", "{output}", "{url}"],
            tls: .arguments(["--cacert", "{ca}"]),
            batch: .native(["-q", "-n", "\(count)", "-i", "{pairs}"], requiresOption: "--input-file"),
            resume: .rerun([]), selectedByDefault: false, sources: .fastpull(["-n", "\(count)"]),
            metalink: .fastpull(["-n", "\(count)"]))
    }
}

extension ToolVariant {
    /// `--pipelining on` or `off`: what requests sent ahead on keep-alive bring (and what holding an
    /// answer's last bytes until the next head proves them costs) where the default would not decide
    /// by the round trip. Only with `--tool`.
    enum PipeliningSetting: String { case on, off }

    static func fastpullPipelining(_ setting: PipeliningSetting) -> ToolVariant {
        let option = ["--pipelining", setting.rawValue]
        return ToolVariant(
            name: "fastpull-ahead-\(setting.rawValue)", program: .fastpull, setting: .best,
            note: "--pipelining \(setting.rawValue)",
            single: ["-q"] + option + ["-o", "{output}", "{url}"], tls: .arguments(["--cacert", "{ca}"]),
            batch: .native(["-q"] + option + ["-i", "{pairs}"], requiresOption: "--input-file"),
            resume: .rerun([]), selectedByDefault: false, sources: .fastpull(option),
            metalink: .fastpull(option))
    }
}
