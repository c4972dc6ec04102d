import FoundationEssentials

extension Batch {
    /// The largest Metalink document followed, in bytes.
    static let largestMetalink: Int64 = 16 << 20

    /// When `url` (of an item saved into `folder`) is a Metalink document — its media type, or a
    /// `.meta4` name — and ``Configuration/followsMetalink`` is on: the document is fetched and parsed,
    /// and the file it describes is what the item downloads (its first URL, the others as mirrors, its
    /// hashes, piece hashes and size, its name in `folder`). Nil for any other file.
    ///
    /// - Throws: ``FastpullError`` when the document cannot be fetched or read, or describes more than
    ///   one file (each needs a destination of its own: read it with ``Metalink/init(parsing:)``).
    static func followedMetalink(
        _ url: URL, probed: Download.Probed, folder: URL, configuration: Configuration
    ) async throws(FastpullError) -> (url: URL, file: URL, configuration: Configuration)? {
        let remote = probed.remote
        guard configuration.followsMetalink,
            Metalink.isMediaType(remote.contentType) || hasMetalinkName(remote.finalURL),
            (remote.size ?? 0) <= largestMetalink
        else { return nil }
        // The document is fetched whole on its own; an answer the naming probe kept goes now.
        probed.answer?.discard()
        let data = try await fetchDocument(url, configuration: configuration)
        let metalink: Metalink
        do {
            metalink = try Metalink(parsing: data)
        } catch {
            throw error.with(message: "\(url.redactedForDisplay): " + error.message)
        }
        guard metalink.files.count == 1, let file = metalink.files.first, let first = file.urls.first else {
            throw FastpullError(
                .usage,
                "\(url.redactedForDisplay) is a Metalink document of \(metalink.files.count) files; each needs a destination of its own"
            )
        }
        let destination = folder.appendingPathComponent(file.name)
        if file.name.contains("/") {
            try? FileManager.default.createDirectory(
                at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        }
        var settings = configuration
        settings.followsMetalink = false
        return (
            first, destination,
            file.configuration(settings, document: "Metalink file \(url.redactedForDisplay)")
        )
    }

    /// Whether the last component of `url`'s path ends in `.meta4` (any case), read from the path's
    /// bytes: URL's `pathExtension` decodes and splits the whole path for each file of a batch.
    static func hasMetalinkName(_ url: URL) -> Bool {
        let suffix = ".meta4"
        guard let name = OutputName.lastComponent(of: url.path(percentEncoded: false)),
            name.utf8.count > suffix.utf8.count
        else { return false }
        let cut = name.utf8.index(name.utf8.endIndex, offsetBy: -suffix.utf8.count)
        // A name that is only dots and the extension (`/.meta4`, `/..meta4`) has none.
        return HTTPHeaders.namesEqual(name[cut...], suffix) && name[..<cut].contains { $0 != "." }
    }

    /// The bytes of a small document, fetched over one connection into a temporary file.
    private static func fetchDocument(_ url: URL, configuration: Configuration) async throws(FastpullError)
        -> Data
    {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "fastpull-metalink-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw FastpullError(
                .localIO, "cannot create a temporary folder for \(url.redactedForDisplay): \(error)")
        }
        var settings = configuration
        settings.connections = .fixed(1)
        settings.followsMetalink = false
        settings.mirrors = []
        settings.checksums = []
        settings.checksumFiles = []
        settings.pieceHashes = nil
        settings.expectedSize = nil
        settings.describedChecksums = nil
        settings.resumeFromJournal = false
        settings.traceFile = nil
        let destination = folder.appendingPathComponent("document.meta4")
        _ = try await Download(from: url, to: destination, configuration: settings).run()
        guard let data = FileManager.default.contents(atPath: destination.path) else {
            throw FastpullError(
                .localIO, "cannot read the Metalink document fetched from \(url.redactedForDisplay)")
        }
        return data
    }
}
