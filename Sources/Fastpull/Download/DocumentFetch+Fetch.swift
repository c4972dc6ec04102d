import FoundationEssentials

extension DocumentFetch {
    /// The bytes of the document at `url`, fetched over one connection with `configuration`'s
    /// connection settings (TLS, timeouts, retries, header fields, proxy) into a temporary folder that
    /// is removed afterwards.
    ///
    /// - Throws: ``FastpullError``: ``FastpullError/Code/usage`` for a document over the limit
    ///   (``tooLarge(_:declared:)``); the fetch's own code (network, HTTP status, TLS, local I/O),
    ///   with a message that names the document, when it cannot be fetched.
    package func fetch(_ url: URL, configuration: Configuration) async throws(FastpullError) -> Data {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "fastpull-document-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw FastpullError(
                .localIO,
                "cannot create a temporary folder for the \(kind) \(url.redactedForDisplay): \(error)")
        }
        var settings = configuration
        settings.connections.count = .fixed(1)
        settings.sources.followsMetalink = false
        settings.sources.usesLinkedMirrors = false
        settings.sources.mirrors = []
        settings.integrity.checksums = []
        settings.integrity.checksumFiles = []
        settings.integrity.pieceHashes = nil
        settings.integrity.expectedSize = nil
        // The download's part (`--range`) and largest size are the file's, not its document's.
        settings.request.byteRange = nil
        settings.integrity.maximumSize = nil
        settings.integrity.describedChecksums = nil
        settings.resume.fromJournal = false
        settings.diagnostics.traceFile = nil
        settings.document = self
        let destination = folder.appendingPathComponent("document")
        do {
            _ = try await Download(from: url, to: destination, configuration: settings).run()
        } catch {
            // A usage error (this refusal, a bad URL or header field) says what it is about itself.
            guard error.code != .usage else { throw error }
            throw error.with(
                message: "could not fetch the \(kind) \(url.redactedForDisplay): \(error.message)")
        }
        do {
            return try read(path: destination.path(percentEncoded: false))
        } catch {
            throw FastpullError(
                .localIO, "cannot read the \(kind) fetched from \(url.redactedForDisplay): \(error.message)")
        }
    }
}
