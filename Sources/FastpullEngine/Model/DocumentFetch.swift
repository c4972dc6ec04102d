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
    package var limit: Int64 { Configuration.Limits.largestDocument }

    /// A document called `kind` in messages, with what to do about one that is too large.
    package init(kind: String, advice: String? = nil, remedy: FastpullError.Remedy? = nil) {
        self.kind = kind
        self.advice = advice
        self.remedy = remedy
    }

    /// The refusal of the document at `url`, which declared `declared` bytes (nil: it sent more than
    /// the limit without declaring a length). The exit code is ``FastpullError/Code/usage``, as for
    /// any input file that cannot be used.
    package func tooLarge(_ url: URL, declared: Int64?) -> FastpullError {
        let most = "the \(ByteFormat.size(limit)) a \(kind) may have"
        let what =
            declared.map { "is \(ByteFormat.size($0)) (\($0) bytes), more than \(most)" }
            ?? "sent more than \(most) (its length was not declared)"
        let message = "the \(kind) \(url.redactedForDisplay) \(what)" + (advice.map { "; \($0)" } ?? "")
        var error = FastpullError(.usage, message, remedy: remedy)
        error.url = url
        return error
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
