import COpenSSL
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What the mirror scenarios give the tools besides the URLs: the file's SHA-256 and the SHA-1 of each
/// piece, a bad mirror's copy with one byte flipped, and the Metalink 4 file (RFC 5854) that lists it all.
enum MirrorFiles {
    /// The piece length of the Metalink files.
    static let pieceLength = 1 << 20

    /// A file's digests, lowercase hex.
    struct Digests: Sendable {
        var sha256: String
        /// The SHA-1 of each ``MirrorFiles/pieceLength`` piece (the last one may be shorter).
        var pieceSHA1: [String]
    }

    /// Reads `path` once for its SHA-256 and the SHA-1 of each piece.
    static func digests(of path: String) throws -> Digests {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { throw BenchError("cannot open \(path): \(systemMessage())") }
        defer { close(descriptor) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pieceLength, alignment: 16)
        defer { buffer.deallocate() }
        guard let whole = EVP_MD_CTX_new(), let piece = EVP_MD_CTX_new() else {
            throw BenchError("OpenSSL could not make a digest context")
        }
        defer {
            EVP_MD_CTX_free(whole)
            EVP_MD_CTX_free(piece)
        }
        EVP_DigestInit_ex(whole, EVP_sha256(), nil)
        var pieces: [String] = []
        while true {
            var filled = 0
            while filled < pieceLength {
                let got = read(descriptor, buffer.baseAddress! + filled, pieceLength - filled)
                if got < 0 && errno == EINTR { continue }
                guard got >= 0 else { throw BenchError("cannot read \(path): \(systemMessage())") }
                if got == 0 { break }
                filled += got
            }
            if filled == 0 { break }
            EVP_DigestUpdate(whole, buffer.baseAddress, filled)
            EVP_DigestInit_ex(piece, EVP_sha1(), nil)
            EVP_DigestUpdate(piece, buffer.baseAddress, filled)
            pieces.append(final(piece))
            if filled < pieceLength { break }
        }
        return Digests(sha256: final(whole), pieceSHA1: pieces)
    }

    private static func final(_ context: OpaquePointer) -> String {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &output, &length)
        return output.prefix(Int(length)).map { String(format: "%02x", $0) }.joined()
    }

    /// Writes `copy`: `source` with the byte at `offset` inverted, with the source's modification time,
    /// so nginx sends the same ETag and Last-Modified for both (a mirror whose copy went bad, not another
    /// version of the file).
    static func writeCorruptCopy(of source: String, to copy: String, flipping offset: Int64) throws {
        let input = open(source, O_RDONLY)
        guard input >= 0 else { throw BenchError("cannot open \(source): \(systemMessage())") }
        defer { close(input) }
        let output = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard output >= 0 else { throw BenchError("cannot create \(copy): \(systemMessage())") }
        defer { close(output) }
        let chunk = 4 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        var position: Int64 = 0
        while true {
            let got = read(input, buffer.baseAddress, chunk)
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { throw BenchError("cannot read \(source): \(systemMessage())") }
            if got == 0 { break }
            if offset >= position && offset < position + Int64(got) {
                let index = Int(offset - position)
                buffer[index] = ~buffer[index]
            }
            var done = 0
            while done < got {
                let written = write(output, buffer.baseAddress! + done, got - done)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { throw BenchError("cannot write \(copy): \(systemMessage())") }
                done += written
            }
            position += Int64(got)
        }
        guard offset < position else {
            throw BenchError("\(source) has \(position) bytes: no byte \(offset) to flip")
        }
        var info = stat()
        guard fstat(input, &info) == 0 else { throw BenchError("cannot stat \(source): \(systemMessage())") }
        var times = [info.st_atim, info.st_mtim]
        guard futimens(output, &times) == 0 else {
            throw BenchError("cannot set the time of \(copy): \(systemMessage())")
        }
    }

    /// A Metalink 4 document for one file: its name, size, SHA-256, piece hashes (SHA-1, 1 MiB) and
    /// `sources` with their priorities, most preferred first.
    static func metalink(
        name: String, size: Int64, digests: Digests, sources: [(url: String, priority: Int)]
    ) -> String {
        var lines = [
            #"<?xml version="1.0" encoding="UTF-8"?>"#,
            #"<metalink xmlns="urn:ietf:params:xml:ns:metalink">"#,
            #"  <generator>fastpull-bench</generator>"#,
            #"  <file name="\#(escaped(name))">"#,
            "    <size>\(size)</size>",
            #"    <hash type="sha-256">\#(digests.sha256)</hash>"#,
            #"    <pieces length="\#(pieceLength)" type="sha-1">"#,
        ]
        lines += digests.pieceSHA1.map { "      <hash>\($0)</hash>" }
        lines.append("    </pieces>")
        for source in sources.sorted(by: { $0.priority < $1.priority }) {
            lines.append(#"    <url priority="\#(source.priority)">\#(escaped(source.url))</url>"#)
        }
        lines += ["  </file>", "</metalink>", ""]
        return lines.joined(separator: "\n")
    }

    /// `text` with the five XML special characters escaped.
    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "'", with: "&apos;")
    }
}
