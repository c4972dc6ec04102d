import Fastpull
import FastpullCommandLine
import Foundation

/// Reads the `--checksum-file` sources before the download starts: a local file, or an http(s) URL
/// fetched with Fastpull itself (one connection, the same TLS and timeout settings) into a temporary
/// folder that is removed afterwards. Checksum files are small; anything over ``maximumSize`` is refused.
enum ChecksumFileLoader {
    /// The largest checksum file accepted, in bytes.
    static let maximumSize = 16 << 20

    /// Whether `source` is an http or https URL rather than a path.
    static func isURL(_ source: String) -> Bool {
        guard let scheme = URL(string: source)?.scheme?.lowercased() else { return false }
        return scheme == "http" || scheme == "https"
    }

    /// The text of every source, in order.
    ///
    /// - Throws: ``FastpullError`` naming the checksum file: ``FastpullError/Code/usage`` for a local
    ///   file that cannot be read or is too large, the download's own code (network, HTTP status, TLS)
    ///   for a URL that cannot be fetched.
    static func load(_ sources: [String], using configuration: Configuration) async throws(FastpullError)
        -> [Configuration.ChecksumFileContents]
    {
        var files: [Configuration.ChecksumFileContents] = []
        for source in sources {
            let data = isURL(source) ? try await fetch(source, using: configuration) : try read(source)
            files.append(.init(source: source, text: String(decoding: data, as: UTF8.self)))
        }
        return files
    }

    private static func read(_ path: String) throws(FastpullError) -> Data {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        if let size = (attributes?[.size] as? NSNumber)?.intValue, size > maximumSize {
            throw FastpullError(
                .usage, "--checksum-file: \(path) is \(size) bytes, too large for a checksum file")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FastpullError(.usage, "--checksum-file: cannot read '\(path)'")
        }
        return data
    }

    private static func fetch(_ source: String, using configuration: Configuration)
        async throws(FastpullError)
        -> Data
    {
        guard let url = URL(string: source) else {
            throw FastpullError(.usage, "--checksum-file: '\(source)' is not a valid URL")
        }
        var settings = Configuration()
        settings.connections = 1
        settings.caFile = configuration.caFile
        settings.insecure = configuration.insecure
        settings.retries = configuration.retries
        settings.connectTimeout = configuration.connectTimeout
        settings.idleTimeout = configuration.idleTimeout
        settings.resumeFromJournal = false

        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("fastpull-checksum-file-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw FastpullError(
                .localIO, "cannot create a temporary folder for the checksum file \(source): \(error)")
        }
        let destination = folder.appendingPathComponent("checksums")
        let report: Report
        do {
            report = try await Fastpull.download(from: url, to: destination, configuration: settings)
        } catch {
            throw FastpullError(
                error.code, "could not fetch the checksum file \(source): \(error.commandLineMessage)")
        }
        guard report.size <= Int64(maximumSize) else {
            throw FastpullError(
                .usage, "--checksum-file: \(source) is \(report.size) bytes, too large for a checksum file")
        }
        guard let data = FileManager.default.contents(atPath: destination.path) else {
            throw FastpullError(.localIO, "cannot read the downloaded checksum file \(destination.path)")
        }
        return data
    }
}
