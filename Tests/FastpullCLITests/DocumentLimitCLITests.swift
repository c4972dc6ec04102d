import FastpullFixtures
import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine

/// Every document fastpull reads for itself — a Metalink URL it follows, `-M URL`, `--checksum-file
/// URL` — is refused past ``Configuration/Limits/largestDocument``: one that declares a longer length
/// before its body is read, one that declares none once it has sent that much.
@Suite("fastpull documents: the size limit")
struct DocumentLimitCLITests {
    /// Far more than the limit: what a server without the limit would send whole.
    static let size: Int64 = 64 << 20
    static let limit = Configuration.Limits.largestDocument
    static let metalinkType = "content-type=application%2Fmetalink4%2Bxml"
    /// A Content-Length, or a chunked body with no length at all (no ranges either, so that no
    /// Content-Range tells it).
    static let framings = ["declared": "", "chunked": "&chunked=1&no-ranges=1"]

    /// How each document is asked for: the arguments, given the document's URL, and what the message
    /// names it.
    static let uses: [String: (arguments: @Sendable (String) -> [String], kind: String)] = [
        "followed": ({ [$0] }, "Metalink file"),
        "metalink": ({ ["-M", $0] }, "--metalink: the Metalink file"),
        "checksum": (
            { ["http://127.0.0.1:9/unused.bin", "-o", "unused.bin", "--checksum-file", $0] },
            "--checksum-file: the checksum file"
        ),
    ]

    @Test(arguments: ["followed", "metalink", "checksum"], ["declared", "chunked"])
    func aDocumentLargerThanTheLimitIsRefused(_ use: String, _ framing: String) async throws {
        let workspace = try ServedWorkspace(label: "fastpull-document-limit")
        let (arguments, kind) = try #require(Self.uses[use])
        let query = Self.metalinkType + (Self.framings[framing] ?? "")
        let url = workspace.server.url("/gen/\(Self.size)?\(query)").absoluteString
        let result = try await CLIRunner.run(arguments(url), in: workspace.folder)

        #expect(result.status == 2, "\(result.stderr)")
        let most = "the 8.0 MiB a \(kind.split(separator: " ").suffix(2).joined(separator: " ")) may have"
        if framing == "declared" {
            #expect(
                result.stderr.contains("\(kind) \(url) is 64.0 MiB (67108864 bytes), more than \(most)"),
                "\(result.stderr)")
            // Refused on its declared length: no more than what was in flight when the answer's head
            // came.
            #expect(workspace.server.stats.bodyBytesSent <= Self.limit + (1 << 20))
        } else {
            #expect(
                result.stderr.contains("\(kind) \(url) sent more than \(most) (its length was not declared)"),
                "\(result.stderr)")
            // Cut at the limit: the rest of the body never left the server but for what the sockets'
            // buffers took in.
            #expect(workspace.server.stats.bodyBytesSent < Self.size / 2)
        }
        let advice =
            use == "followed"
            ? "pass --no-follow-metalink to save the document as it is" : "check that it is the"
        #expect(result.stderr.contains(advice), "\(result.stderr)")
        // Nothing saved, nothing left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: workspace.folder).isEmpty)
    }

    @Test func aLocalChecksumFileLargerThanTheLimitIsRefused() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-document-limit")
        let path = workspace.served + "/SHA256SUMS"
        try Data(count: Int(Self.limit) + 1).write(to: URL(fileURLWithPath: path))
        let result = try await CLIRunner.run(
            ["http://127.0.0.1:9/unused.bin", "-o", "unused.bin", "--checksum-file", path],
            in: workspace.folder)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "--checksum-file: the checksum file \(path) is larger than the 8.0 MiB a checksum file may have"
            ),
            "\(result.stderr)")
    }

    /// Within the limit, a followed document still works: its size decides nothing else.
    @Test func aSavedDocumentIsNotLimited() async throws {
        let workspace = try ServedWorkspace(label: "fastpull-document-limit")
        let url = workspace.server.url("/gen/\(Self.limit + 1)?\(Self.metalinkType)").absoluteString
        let result = try await CLIRunner.run([url, "--no-follow-metalink"], in: workspace.folder)
        #expect(result.status == 0, "\(result.stderr)")
        let saved = try FileManager.default.contentsOfDirectory(atPath: workspace.folder)
        #expect(saved.count == 1, "\(saved)")
    }
}
