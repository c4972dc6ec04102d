import FastpullHTTP
import FoundationEssentials

extension Batch {
    /// How a followed Metalink document is fetched: within ``Configuration/Limits/largestDocument``,
    /// and one too large can be saved as it is instead.
    static let followedDocument = DocumentFetch(kind: "Metalink file", remedy: .saveDocumentAsItIs)

    /// When `url` (of an item saved into `folder`) is a Metalink document — its media type, or a
    /// `.meta4` name — and ``Configuration/Sources/followsMetalink`` is on: the document is fetched and parsed,
    /// and the file it describes is what the item downloads (its first URL, the others as mirrors, its
    /// hashes, piece hashes and size, its name in `folder`). Nil for any other file.
    ///
    /// - Throws: ``FastpullError`` when the document cannot be fetched or read, is larger than
    ///   ``Configuration/Limits/largestDocument`` (refused before its body when the probe found its
    ///   length), or describes more than one file (each needs a destination of its own: read it with
    ///   ``Metalink/init(parsing:)``).
    static func followedMetalink(
        _ url: URL, probed: Probed, folder: URL, configuration: Configuration
    ) async throws(FastpullError) -> (url: URL, file: URL, configuration: Configuration)? {
        let remote = probed.remote
        guard configuration.sources.followsMetalink,
            Metalink.isMediaType(remote.contentType) || hasMetalinkName(remote.finalURL)
        else { return nil }
        // The document is fetched on its own; an answer the naming probe kept goes now.
        probed.answer?.discard()
        if let size = remote.size, size > followedDocument.limit {
            throw followedDocument.tooLarge(url, declared: size)
        }
        let data = try await followedDocument.fetch(url, configuration: configuration)
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
        settings.sources.followsMetalink = false
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
}
