import Fastpull
import FastpullCommandLine
import FoundationEssentials

/// Reads the small documents a run needs before its downloads start (`--checksum-file`,
/// `--metalink`): a local file, or an http(s) URL fetched the way the library fetches every document
/// it reads for itself (``DocumentFetch``: one connection, the same TLS and timeout settings). Neither
/// is read past ``Configuration/Limits/largestDocument``.
enum DocumentLoader {
    /// Whether `source` is an http or https URL rather than a path.
    static func isURL(_ source: String) -> Bool {
        guard let scheme = URL(string: source)?.scheme?.lowercased() else { return false }
        return scheme == "http" || scheme == "https"
    }

    /// The bytes of `source`; `kind` (`checksum file`) and `option` (`--checksum-file`) name it in
    /// messages.
    ///
    /// - Throws: ``FastpullError`` naming the document: ``FastpullError/Code/usage`` for a local file
    ///   that cannot be read and for a document over the limit, the download's own code (network, HTTP
    ///   status, TLS) for a URL that cannot be fetched.
    static func load(
        _ source: String, kind: String, option: String, using configuration: Configuration,
        proxy: @Sendable (URL) throws(UsageError) -> ProxySetting
    ) async throws(FastpullError) -> Data {
        let document = DocumentFetch(kind: kind, advice: "check that it is the \(kind) you meant")
        do throws(FastpullError) {
            guard isURL(source) else { return try document.read(path: source) }
            guard let url = URL(string: source) else {
                throw FastpullError(.usage, "'\(source)' is not a valid URL")
            }
            // Only the connection settings: header fields and credentials are the download's, for
            // its own origin.
            var settings = Configuration()
            settings.tls = configuration.tls
            settings.request.localAddress = configuration.request.localAddress
            settings.retries.limit = configuration.retries.limit
            settings.timeouts.connect = configuration.timeouts.connect
            settings.timeouts.idle = configuration.timeouts.idle
            // Through the proxy the download itself would take (a SOCKS one is refused before any
            // connection), never around it.
            do {
                settings.request.proxy = try proxy(url)
            } catch {
                let message = error.message
                throw FastpullError(
                    .usage, message.hasPrefix("error: ") ? String(message.dropFirst(7)) : message)
            }
            return try await document.fetch(url, configuration: settings)
        } catch  where error.code == .usage {
            var named = error
            named.message = "\(option): \(error.message)"
            throw named
        }
    }
}

/// The `--checksum-file` sources as the library takes them.
enum ChecksumFileLoader {
    /// The text of every source, in order.
    static func load(
        _ sources: [String], using configuration: Configuration,
        proxy: @Sendable (URL) throws(UsageError) -> ProxySetting
    ) async throws(FastpullError) -> [Configuration.ChecksumFileContents] {
        var files: [Configuration.ChecksumFileContents] = []
        for source in sources {
            let data = try await DocumentLoader.load(
                source, kind: "checksum file", option: "--checksum-file", using: configuration, proxy: proxy)
            files.append(.init(source: source, text: String(decoding: data, as: UTF8.self)))
        }
        return files
    }
}

/// The files of every `--metalink` document, in order.
enum MetalinkLoader {
    /// - Throws: ``FastpullError`` naming the document that cannot be read or is not Metalink 4.
    static func load(
        _ sources: [String], using configuration: Configuration,
        proxy: @Sendable (URL) throws(UsageError) -> ProxySetting
    ) async throws(FastpullError) -> [CommandOptions.MetalinkFile] {
        var files: [CommandOptions.MetalinkFile] = []
        for source in sources {
            let data = try await DocumentLoader.load(
                source, kind: "Metalink file", option: "--metalink", using: configuration, proxy: proxy)
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
