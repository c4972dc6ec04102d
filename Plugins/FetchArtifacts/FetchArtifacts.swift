import Foundation
import PackagePlugin

/// `swift package --allow-writing-to-package-directory --allow-network-connections all fetch-artifacts`:
/// reads `artifacts.json` at the package's root — `[{"url": "https://…", "path": "Artifacts/x.bin",
/// "sha256": "9f86…"}]` — and runs `fastpull -i` on it, so every artifact is fetched in parallel,
/// verified, and saved at its path inside the package. An artifact already there with the right
/// SHA-256 is not fetched again.
///
/// Options: `--manifest FILE` reads another file than `artifacts.json`; every other argument goes to
/// `fastpull` as it is (`-j 8`, `--json`, `-q`, `--limit-rate 5M/s`, …).
@main
struct FetchArtifacts: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        var extractor = ArgumentExtractor(arguments)
        let manifestName = extractor.extractOption(named: "manifest").last ?? "artifacts.json"
        let passThrough = extractor.remainingArguments
        let root = context.package.directoryURL
        let manifest = URL(fileURLWithPath: manifestName, relativeTo: root).standardizedFileURL

        let data: Data
        do {
            data = try Data(contentsOf: manifest)
        } catch {
            throw PluginFailure("cannot read \(manifest.path): \(error.localizedDescription)")
        }
        let artifacts = try ArtifactList.decode(data, source: manifest.path)
        for artifact in artifacts {
            let folder = root.appendingPathComponent(artifact.path).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        let input = context.pluginWorkDirectoryURL.appendingPathComponent("artifacts.txt")
        try Data(ArtifactList.inputFile(artifacts).utf8).write(to: input)

        let tool = try context.tool(named: "fastpull")
        let process = Process()
        process.executableURL = tool.url
        process.arguments = ArtifactList.arguments(
            input: input.path, root: root.path, passThrough: passThrough)
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw PluginFailure("fastpull exited with \(process.terminationStatus) (see its messages above)")
        }
    }
}

/// An error the plugin reports as it is.
struct PluginFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The artifacts of `artifacts.json`, and the `fastpull` input file and arguments they become.
enum ArtifactList {
    /// One artifact.
    struct Artifact: Decodable, Equatable {
        /// Where it comes from (http or https).
        var url: String
        /// Where it goes, relative to the package's root.
        var path: String
        /// Its SHA-256, 64 hexadecimal digits (optional, but without it nothing is verified).
        var sha256: String?
    }

    /// The artifacts in `data`, checked: an http(s) URL, a relative path that stays inside the
    /// package, a well-formed SHA-256, and no path twice.
    static func decode(_ data: Data, source: String) throws -> [Artifact] {
        let artifacts: [Artifact]
        do {
            artifacts = try JSONDecoder().decode([Artifact].self, from: data)
        } catch {
            throw PluginFailure("\(source) is not a JSON array of {url, path, sha256}: \(error)")
        }
        var seen: Set<String> = []
        for (index, artifact) in artifacts.enumerated() {
            let name = "\(source): entry \(index + 1)"
            let scheme = URL(string: artifact.url)?.scheme?.lowercased()
            guard scheme == "http" || scheme == "https" else {
                throw PluginFailure("\(name): url must be http:// or https://, got '\(artifact.url)'")
            }
            let components = artifact.path.split(separator: "/")
            guard !artifact.path.hasPrefix("/"), !components.isEmpty, !components.contains("..") else {
                throw PluginFailure(
                    "\(name): path must be relative and stay inside the package, got '\(artifact.path)'")
            }
            if let sha256 = artifact.sha256 {
                guard sha256.count == 64, sha256.allSatisfy(\.isHexDigit) else {
                    throw PluginFailure("\(name): sha256 must be 64 hexadecimal digits, got '\(sha256)'")
                }
            }
            guard seen.insert(artifact.path).inserted else {
                throw PluginFailure("\(name): the path '\(artifact.path)' is listed twice")
            }
        }
        return artifacts
    }

    /// The `fastpull -i` file: `URL "PATH" sha256=HEX` a line.
    static func inputFile(_ artifacts: [Artifact]) -> String {
        artifacts.map { artifact in
            let path = artifact.path.replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: "\"", with: "\\\"")
            var line = "\(artifact.url) \"\(path)\""
            if let sha256 = artifact.sha256 { line += " sha256=\(sha256)" }
            return line + "\n"
        }.joined()
    }

    /// `fastpull`'s arguments: the input file, the package root as the folder, `--update` (a file
    /// that matches its checksum is kept, one that does not is fetched again), then what the user
    /// passed.
    static func arguments(input: String, root: String, passThrough: [String]) -> [String] {
        ["-i", input, "-d", root, "--update"] + passThrough
    }
}
