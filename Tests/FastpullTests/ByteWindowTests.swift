import Testing

@testable import FastpullHTTP

/// `--range`'s window: requests moved into it, answers told back in its terms, and the answers
/// whose bytes are not the window's refused.
@Suite("Byte window")
struct ByteWindowTests {
    func head(_ status: Int, _ fields: [(name: String, value: String)]) -> ResponseHead {
        ResponseHead(
            versionMajor: 1, versionMinor: 1, status: status, reason: "", headers: HTTPHeaders(fields))
    }

    @Test func requestsMoveIntoTheWindowAndAnswersComeBackInItsTerms() throws {
        let window = ByteWindow(.from(1000, through: 1999))
        #expect(window.rangeValue(for: nil) == "bytes=1000-1999")
        #expect(window.rangeValue(for: 0...0) == "bytes=1000-1000")
        #expect(window.rangeValue(for: 100...5000) == "bytes=1100-1999")
        let answer = try window.translate(
            head(206, [("Content-Range", "bytes 1100-1199/50000"), ("Content-Length", "100")]), method: "GET")
        #expect(answer.headers["Content-Range"] == "bytes 100-199/1000")
        #expect(answer.headers["Content-Length"] == "100")
        let described = try window.translate(head(200, [("Content-Length", "50000")]), method: "HEAD")
        #expect(described.contentLength == 1000)
    }

    @Test func anEndPastTheFileAndTheLastBytesAreFixedByTheSize() throws {
        let open = ByteWindow(.from(40000, through: 99999))
        _ = try open.translate(head(200, [("Content-Length", "50000")]), method: "HEAD")
        #expect(open.rangeValue(for: nil) == "bytes=40000-49999")
        let last = ByteWindow(.last(500))
        #expect(last.rangeValue(for: nil) == "bytes=-500")
        let answer = try last.translate(
            head(206, [("Content-Range", "bytes 49500-49999/50000")]), method: "GET")
        #expect(answer.headers["Content-Range"] == "bytes 0-499/500")
        #expect(last.rangeValue(for: 100...199) == "bytes=49600-49699")
        let whole = ByteWindow(.last(500))
        #expect(try whole.resolve(size: 20) == (first: 0, last: 19))
    }

    @Test func answersThatAreNotTheWindowsBytesAreRefused() throws {
        let window = ByteWindow(.from(10, through: 19))
        #expect(throws: TransferError.self) {
            try window.translate(head(200, [("Content-Length", "100")]), method: "GET")
        }
        #expect(throws: TransferError.self) {
            try window.translate(head(416, [("Content-Range", "bytes */5")]), method: "GET")
        }
        #expect(throws: TransferError.self) {
            try ByteWindow(.from(100, through: nil)).translate(
                head(200, [("Content-Length", "100")]), method: "HEAD")
        }
        // Bytes outside the window are left as they came, for the download to refuse; a redirect
        // and an error status pass.
        let outside = try window.translate(head(206, [("Content-Range", "bytes 0-9/100")]), method: "GET")
        #expect(outside.headers["Content-Range"] == "bytes 0-9/100")
        #expect(try window.translate(head(302, [("Location", "/x")]), method: "GET").status == 302)
        #expect(try window.translate(head(404, []), method: "GET").status == 404)
    }
}
