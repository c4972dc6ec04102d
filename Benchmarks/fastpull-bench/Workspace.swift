import FastpullFixtures
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The folders and programs of one session: sources and outputs on tmpfs, disk outputs, results, and the
/// binaries under test.
struct Workspace: Sendable {
    /// The package root (found from this file's path).
    var packageRoot: String
    /// `<tmpfs>/fastpull-bench-<pid>`: sources (`www/`), outputs (`out/`), lists, logs, nginx, traces.
    var root: String
    var documentRoot: String { root + "/www" }
    var tmpfsOutput: String { root + "/out" }
    var lists: String { root + "/lists" }
    var logs: String { root + "/logs" }
    var nginx: String { root + "/nginx" }
    var traces: String { root + "/traces" }
    /// Outputs of scenarios that write to disk.
    var diskOutput: String
    /// Where results.md, results.json and the charts go.
    var results: String
    /// The CA that signed the HTTPS servers' certificate.
    var caFile: String { FixturePaths.certificatesDirectory + "/ca.pem" }
    var serverCertificate: String { FixturePaths.certificatesDirectory + "/server.pem" }
    var serverKey: String { FixturePaths.certificatesDirectory + "/server.key" }

    /// Creates the folders for `options`.
    init(options: BenchOptions) throws {
        packageRoot =
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        root = "\(options.tmpfs)/fastpull-bench-\(getpid())"
        results = Self.absolute(options.output)
        diskOutput = (options.disk.map(Self.absolute) ?? results) + "/disk-scratch-\(getpid())"
        let manager = FileManager.default
        for folder in [documentRoot, tmpfsOutput, lists, logs, nginx, traces, diskOutput, results] {
            try manager.createDirectory(
                atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        }
        Cleanup.register(folder: root)
        Cleanup.register(folder: diskOutput)
        // nginx workers run as an unprivileged user: they must be able to read the sources.
        chmod(root, 0o755)
    }

    /// Removes the tmpfs folder and the disk scratch folder.
    func clean() {
        try? FileManager.default.removeItem(atPath: root)
        try? FileManager.default.removeItem(atPath: diskOutput)
    }

    /// The output folder for `destination`.
    func outputFolder(for destination: Destination) -> String {
        destination == .tmpfs ? tmpfsOutput : diskOutput
    }

    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    /// This executable's real path.
    static func currentExecutable() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
    }

    /// The fastpull binary: `--fastpull PATH`, else fastpull as it ships (``shippedBuildArguments``),
    /// brought up to date in `.build/shipped` of the package at every session (a no-op when nothing
    /// changed): the harness measures the current sources, never a stale binary.
    static func fastpullBinary(option: String?, packageRoot: String, log: (String) -> Void) throws -> String {
        if let option {
            guard let found = findExecutable(Self.absolute(option)) else {
                throw BenchError("--fastpull: \(option) is not an executable")
            }
            return found
        }
        let scratch = packageRoot + "/.build/shipped"
        let command = (["swift"] + shippedBuildArguments(packageRoot: packageRoot, scratch: scratch))
            .joined(separator: " ")
        log("building fastpull as it ships: \(command)")
        let child = try ChildProcess(
            executable: "swift", arguments: shippedBuildArguments(packageRoot: packageRoot, scratch: scratch),
            standardOutput: "/tmp/fastpull-bench-build.out", standardError: "/tmp/fastpull-bench-build.err"
        )
        let candidate = scratch + "/release/fastpull"
        guard child.wait().succeeded, access(candidate, X_OK) == 0 else {
            let why =
                Runner.tail(of: "/tmp/fastpull-bench-build.err")
                ?? Runner.tail(of: "/tmp/fastpull-bench-build.out")
            throw BenchError(
                "no fastpull binary at \(candidate) (\(why ?? "the build failed")); run `\(command)` "
                    + "or pass --fastpull PATH")
        }
        return candidate
    }

    /// The build of the command line as it ships: release, with the Swift runtime and Foundation linked
    /// into the binary (`--static-swift-stdlib`), so that it starts in about half the time (no shared
    /// Swift libraries to load and bind). A separate scratch folder keeps it from rebuilding the
    /// package's `.build/release` (the two configurations differ, and each switch costs a full build).
    static func shippedBuildArguments(packageRoot: String, scratch: String) -> [String] {
        [
            "build", "-c", "release", "--static-swift-stdlib", "--package-path", packageRoot,
            "--scratch-path", scratch, "--product", "fastpull",
        ]
    }
}
