import FastpullHTTP
import FoundationEssentials

/// A small document Fastpull reads for itself rather than saves — a Metalink file it follows or is
/// given, a checksum file at a URL — and the one way every such document is fetched
/// (``fetch(_:configuration:)``). None is read past ``Configuration/Limits/largestDocument``: a
/// declared length over it is refused before a byte of the body is read, and a body without one
/// (chunked, or until the connection closes) is cut there and refused, so the memory and the disk it
/// takes stay within the limit whatever the server sends.
package struct DocumentFetch: Sendable {
    /// What the document is, in messages: `Metalink file`, `checksum file`.
    package var kind: String
    /// What to do about a document that is too large, said after the refusal: `check that the URL
    /// names a checksum file`.
    package var advice: String?
    /// The step past a refusal, where there is one (a followed Metalink document can be saved as it is).
    package var remedy: FastpullError.Remedy?

    /// The most bytes read of a document.
    var limit: Int64 { Configuration.Limits.largestDocument }

    /// A document called `kind` in messages, with what to do about one that is too large.
    package init(kind: String, advice: String? = nil, remedy: FastpullError.Remedy? = nil) {
        self.kind = kind
        self.advice = advice
        self.remedy = remedy
    }

    /// The refusal of the document at `url`, which declared `declared` bytes (nil: it sent more than
    /// the limit without declaring a length). The exit code is ``FastpullError/Code/usage``, as for
    /// any input file that cannot be used.
    func tooLarge(_ url: URL, declared: Int64?) -> FastpullError {
        let most = "the \(ByteFormat.size(limit)) a \(kind) may have"
        let what =
            declared.map { "is \(ByteFormat.size($0)) (\($0) bytes), more than \(most)" }
            ?? "sent more than \(most) (its length was not declared)"
        let message = "the \(kind) \(url.redactedForDisplay) \(what)" + (advice.map { "; \($0)" } ?? "")
        var error = FastpullError(.usage, message, remedy: remedy)
        error.url = url
        return error
    }

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

    /// The bytes of the document in the file at `path` (a FIFO or a device too), read up to the limit.
    ///
    /// - Throws: ``FastpullError/Code/usage`` when it cannot be read or is larger than the limit.
    package func read(path: String) throws(FastpullError) -> Data {
        let bytes: [UInt8]
        do {
            bytes = try FileSystem.read(path, atMost: Int(limit))
        } catch {
            throw FastpullError(.usage, "cannot read '\(path)': \(error)")
        }
        guard bytes.count <= limit else {
            let message =
                "the \(kind) \(path) is larger than the \(ByteFormat.size(limit)) a \(kind) may have"
            throw FastpullError(.usage, message + (advice.map { "; \($0)" } ?? ""), remedy: remedy)
        }
        return Data(bytes)
    }
}
