import Fastpull
import FastpullCommandLine
import FoundationEssentials
import Glibc

/// Reads the small documents a run needs before its downloads start (`--checksum-file`,
/// `--metalink`): a local file, or an http(s) URL fetched with Fastpull itself (one connection, the
/// same TLS and timeout settings) into a temporary folder that is removed afterwards. Anything over
/// ``maximumSize`` is refused.
enum DocumentLoader {
    /// The largest document accepted, in bytes.
    static let maximumSize = 16 << 20

    /// Whether `source` is an http or https URL rather than a path.
    static func isURL(_ source: String) -> Bool {
        guard let scheme = URL(string: source)?.scheme?.lowercased() else { return false }
        return scheme == "http" || scheme == "https"
    }

    /// The bytes of `source`; `kind` (`checksum file`) and `option` (`--checksum-file`) name it in
    /// messages.
    ///
    /// - Throws: ``FastpullError`` naming the document: ``FastpullError/Code/usage`` for a local file
    ///   that cannot be read or is too large, the download's own code (network, HTTP status, TLS) for
    ///   a URL that cannot be fetched.
    static func load(_ source: String, kind: String, option: String, using configuration: Configuration)
        async throws(FastpullError) -> Data
    {
        isURL(source)
            ? try await fetch(source, kind: kind, option: option, using: configuration)
            : try read(source, kind: kind, option: option)
    }

    private static func read(_ path: String, kind: String, option: String) throws(FastpullError) -> Data {
        var info = stat()
        if stat(path, &info) == 0, info.st_size > Self.maximumSize {
            let size = info.st_size
            throw FastpullError(.usage, "\(option): \(path) is \(size) bytes, too large for a \(kind)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FastpullError(.usage, "\(option): cannot read '\(path)'")
        }
        return data
    }

    private static func fetch(
        _ source: String, kind: String, option: String, using configuration: Configuration
    )
        async throws(FastpullError) -> Data
    {
        guard let url = URL(string: source) else {
            throw FastpullError(.usage, "\(option): '\(source)' is not a valid URL")
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
            .appendingPathComponent("fastpull-document-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw FastpullError(
                .localIO, "cannot create a temporary folder for the \(kind) \(source): \(error)")
        }
        let destination = folder.appendingPathComponent("document")
        let report: Report
        do {
            report = try await Fastpull.download(from: url, to: destination, configuration: settings)
        } catch {
            throw FastpullError(
                error.code, "could not fetch the \(kind) \(source): \(error.commandLineMessage)")
        }
        guard report.size <= Int64(maximumSize) else {
            throw FastpullError(
                .usage, "\(option): \(source) is \(report.size) bytes, too large for a \(kind)")
        }
        guard let data = FileManager.default.contents(atPath: destination.path) else {
            throw FastpullError(.localIO, "cannot read the downloaded \(kind) \(destination.path)")
        }
        return data
    }
}

/// The `--checksum-file` sources as the library takes them.
enum ChecksumFileLoader {
    /// The text of every source, in order.
    static func load(_ sources: [String], using configuration: Configuration) async throws(FastpullError)
        -> [Configuration.ChecksumFileContents]
    {
        var files: [Configuration.ChecksumFileContents] = []
        for source in sources {
            let data = try await DocumentLoader.load(
                source, kind: "checksum file", option: "--checksum-file", using: configuration)
            files.append(.init(source: source, text: String(decoding: data, as: UTF8.self)))
        }
        return files
    }
}

/// The files of every `--metalink` document, in order.
enum MetalinkLoader {
    /// - Throws: ``FastpullError`` naming the document that cannot be read or is not Metalink 4.
    static func load(_ sources: [String], using configuration: Configuration) async throws(FastpullError)
        -> [CommandOptions.MetalinkFile]
    {
        var files: [CommandOptions.MetalinkFile] = []
        for source in sources {
            let data = try await DocumentLoader.load(
                source, kind: "Metalink file", option: "--metalink", using: configuration)
            do {
                let metalink = try Metalink(parsing: data)
                files += metalink.files.map { CommandOptions.MetalinkFile(source: source, file: $0) }
            } catch {
                throw FastpullError(
                    .usage,
                    "--metalink: \(source): "
                        + error.message.replacing("the Metalink file ", with: "it "))
            }
        }
        return files
    }
}
