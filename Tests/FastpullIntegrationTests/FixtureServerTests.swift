import Dispatch
import Foundation
import Glibc
import Testing

@testable import FastpullFixtures

/// The fixture server against real clients: `curl` (run as a process) and raw sockets.
@Suite("FixtureServerTests")
struct FixtureServerTests {
    // MARK: Content

    @Test func fillPinsTheContentDefinition() {
        // Byte i is byte i % 8 (little-endian) of splitmix64(seed + i / 8).
        #expect(FixtureContent.bytes(count: 8, seed: 1) == [0xC1, 0x5C, 0x02, 0x89, 0xEC, 0x2D, 0x0A, 0x91])
        #expect(FixtureContent.splitmix64(1) == 0x910A_2DEC_8902_5CC1)
        let word = FixtureContent.splitmix64(7 &+ 3).littleEndian
        let expected = withUnsafeBytes(of: word) { Array($0) }
        #expect(Array(FixtureContent.bytes(count: 32, seed: 7)[24..<32]) == expected)
        #expect(FixtureContent.bytes(count: 64, seed: 1) != FixtureContent.bytes(count: 64, seed: 2))
    }

    @Test func fillAtUnalignedOffsetsMatchesSlicesOfBytes() {
        let seed: UInt64 = 0xDEAD_BEEF
        let reference = FixtureContent.bytes(count: 4096, seed: seed)
        // The storage is allocated one byte further on so that the destination itself is misaligned.
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: 200, alignment: 16)
        defer { storage.deallocate() }
        for offset in 0..<24 {
            for count in [0, 1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 150] {
                for misalignment in [0, 1, 3] {
                    let destination = UnsafeMutableRawBufferPointer(
                        rebasing: storage[misalignment..<(misalignment + count)])
                    destination.initializeMemory(as: UInt8.self, repeating: 0x55)
                    FixtureContent.fill(destination, offset: Int64(offset), seed: seed)
                    #expect(Array(destination) == Array(reference[offset..<(offset + count)]))
                }
            }
        }
        // Far offsets: the word index is offset / 8, not a running counter.
        let far: Int64 = 5_000_000_003
        var tail = [UInt8](repeating: 0, count: 21)
        tail.withUnsafeMutableBytes { FixtureContent.fill($0, offset: far, seed: seed) }
        var oneByOne = [UInt8](repeating: 0, count: 21)
        for index in 0..<21 {
            oneByOne[index..<(index + 1)].withUnsafeMutableBytes {
                FixtureContent.fill($0, offset: far + Int64(index), seed: seed)
            }
        }
        #expect(tail == oneByOne)
    }

    // MARK: GET, HEAD, ranges

    @Test func fullGetMatchesContentAndIsCounted() throws {
        let server = try FixtureServer()
        let size = 1_000_003
        let result = try Curl.run(server.url("/gen/\(size)?seed=9"))
        #expect(result.exitCode == 0)
        #expect(result.status == 200)
        #expect(result.header("Content-Length") == "\(size)")
        #expect(result.body == Data(FixtureContent.bytes(count: size, seed: 9)))
        #expect(server.stats == FixtureStats(requests: 1, bodyBytesSent: Int64(size), connections: 1))

        let suffixed = try Curl.run(server.url("/gen/2K"))
        #expect(suffixed.body == Data(FixtureContent.bytes(count: 2048, seed: 1)))
        #expect(suffixed.header("ETag") == "\"gen-2048-1\"")
    }

    @Test func headSendsTheHeadersOfGetWithoutBody() throws {
        let server = try FixtureServer()
        let result = try Curl.run(server.url("/gen/1000?seed=4"), "-I")
        #expect(result.status == 200)
        #expect(result.header("Content-Length") == "1000")
        #expect(result.header("Accept-Ranges") == "bytes")
        #expect(result.header("ETag") == "\"gen-1000-4\"")
        #expect(result.header("Last-Modified") == "Wed, 01 Jan 2020 00:00:00 GMT")
        #expect(result.header("Content-Type") == "application/octet-stream")
        #expect(server.stats.bodyBytesSent == 0)
        #expect(server.stats.requests == 1)

        // On the wire: nothing follows the head, so the next response on the connection parses cleanly.
        let client = try RawClient(port: server.port)
        client.send("HEAD /gen/1000 HTTP/1.1\r\nHost: x\r\n\r\nGET /gen/5?seed=2 HTTP/1.1\r\nHost: x\r\n\r\n")
        let headOnly = try #require(client.readHead())
        #expect(headOnly.contains("Content-Length: 1000\r\n"))
        let next = try #require(client.readResponse())
        #expect(next.head.hasPrefix("HTTP/1.1 200"))
        #expect(next.body == FixtureContent.bytes(count: 5, seed: 2))
    }

    struct RangeCase: Sendable, CustomTestStringConvertible {
        var range: String
        var status: Int
        var contentRange: String?
        var bytes: Range<Int>?
        var testDescription: String { "Range: bytes=\(range)" }
    }

    @Test(arguments: [
        RangeCase(range: "10-19", status: 206, contentRange: "bytes 10-19/1000", bytes: 10..<20),
        RangeCase(range: "990-", status: 206, contentRange: "bytes 990-999/1000", bytes: 990..<1000),
        RangeCase(range: "-25", status: 206, contentRange: "bytes 975-999/1000", bytes: 975..<1000),
        RangeCase(range: "-5000", status: 206, contentRange: "bytes 0-999/1000", bytes: 0..<1000),
        RangeCase(range: "995-2000", status: 206, contentRange: "bytes 995-999/1000", bytes: 995..<1000),
        RangeCase(range: "0-0", status: 206, contentRange: "bytes 0-0/1000", bytes: 0..<1),
        RangeCase(range: "1000-", status: 416, contentRange: "bytes */1000", bytes: nil),
        RangeCase(range: "5000-6000", status: 416, contentRange: "bytes */1000", bytes: nil),
        RangeCase(range: "-0", status: 416, contentRange: "bytes */1000", bytes: nil),
        RangeCase(range: "0-1,5-6", status: 200, contentRange: nil, bytes: 0..<1000),
        RangeCase(range: "20-10", status: 200, contentRange: nil, bytes: 0..<1000),
    ])
    func ranges(_ testCase: RangeCase) async throws {
        let server = try FixtureServer()
        let content = FixtureContent.bytes(count: 1000, seed: 1)
        let result = try Curl.run(server.url("/gen/1000"), "-H", "Range: bytes=\(testCase.range)")
        #expect(result.status == testCase.status)
        #expect(result.header("Content-Range") == testCase.contentRange)
        if let bytes = testCase.bytes {
            #expect(result.body == Data(content[bytes]))
            #expect(result.header("Content-Length") == "\(bytes.count)")
            // The server counts a write once it returns; curl may have the bytes (and have exited)
            // a moment before that.
            let deadline = ContinuousClock.now + .seconds(10)
            while server.stats.bodyBytesSent < Int64(bytes.count), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(server.stats.bodyBytesSent == Int64(bytes.count))
        } else {
            #expect(server.stats.bodyBytesSent == 0)
        }
    }

    @Test func ifRangeHonoursOnlyTheCurrentValidator() throws {
        let server = try FixtureServer()
        let url = server.url("/gen/1000?seed=3")
        let matching = try Curl.run(url, "-r", "10-19", "-H", "If-Range: \"gen-1000-3\"")
        #expect(matching.status == 206)
        let byDate = try Curl.run(url, "-r", "10-19", "-H", "If-Range: Wed, 01 Jan 2020 00:00:00 GMT")
        #expect(byDate.status == 206)
        let stale = try Curl.run(url, "-r", "10-19", "-H", "If-Range: \"gen-1000-2\"")
        #expect(stale.status == 200)
        #expect(stale.body == Data(FixtureContent.bytes(count: 1000, seed: 3)))
        let weak = try Curl.run(url, "-r", "10-19", "-H", "If-Range: W/\"gen-1000-3\"")
        #expect(weak.status == 200)
    }

    @Test func keepAliveServesTwoRequestsOnOneConnection() throws {
        let server = try FixtureServer()
        let result = try Curl.run(
            [
                "-s", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{num_connects}\n",
                server.url("/gen/100").absoluteString, server.url("/gen/2000?seed=2").absoluteString,
            ])
        #expect(result.exitCode == 0)
        #expect(String(decoding: result.body, as: UTF8.self) == "1\n0\n")
        // The server counts a body once it is sent, which may be just after curl has read it.
        let expected = FixtureStats(requests: 2, bodyBytesSent: 2100, connections: 1)
        let deadline = ContinuousClock.now + .seconds(5)
        while server.stats != expected, ContinuousClock.now < deadline { usleep(1000) }
        #expect(server.stats == expected)
    }

    @Test func closeParameterAndHTTP10CloseTheConnection() throws {
        let server = try FixtureServer()
        let result = try Curl.run(
            [
                "-s", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{num_connects}\n",
                server.url("/gen/100?close=1").absoluteString, server.url("/gen/100?close=1").absoluteString,
            ])
        #expect(String(decoding: result.body, as: UTF8.self) == "1\n1\n")
        #expect(server.stats.connections == 2)

        let client = try RawClient(port: server.port)
        client.send("GET /gen/10 HTTP/1.0\r\nHost: x\r\n\r\n")
        let response = try #require(client.readResponse())
        #expect(response.head.contains("Connection: close"))
        #expect(response.body == FixtureContent.bytes(count: 10, seed: 1))
        #expect(client.readToEnd().isEmpty)
    }

    // MARK: Faults

    @Test func chunkedSendsNoLength() throws {
        let server = try FixtureServer()
        let get = try Curl.run(server.url("/gen/300000?chunked=1"))
        #expect(get.status == 200)
        #expect(get.header("Transfer-Encoding") == "chunked")
        #expect(get.header("Content-Length") == nil)
        #expect(get.body == Data(FixtureContent.bytes(count: 300_000, seed: 1)))
        let head = try Curl.run(server.url("/gen/300000?chunked=1"), "-I")
        #expect(head.header("Content-Length") == nil)
        let ranged = try Curl.run(server.url("/gen/300000?chunked=1"), "-r", "5-9")
        #expect(ranged.status == 206)
        #expect(ranged.body == Data(FixtureContent.bytes(count: 10, seed: 1)[5..<10]))

        // The framing on the wire: one chunk per slice, then the last chunk.
        let client = try RawClient(port: server.port)
        client.send("GET /gen/5?chunked=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        let raw = client.readUntil(suffix: Array("0\r\n\r\n".utf8))
        let expectedBody =
            Array("5\r\n".utf8) + FixtureContent.bytes(count: 5, seed: 1) + Array("\r\n0\r\n\r\n".utf8)
        #expect(Array(raw.suffix(expectedBody.count)) == expectedBody)
    }

    @Test func noRangesIgnoresRange() throws {
        let server = try FixtureServer()
        let result = try Curl.run(server.url("/gen/1000?no-ranges=1"), "-r", "10-19")
        #expect(result.status == 200)
        #expect(result.header("Accept-Ranges") == nil)
        #expect(result.header("Content-Range") == nil)
        #expect(result.body == Data(FixtureContent.bytes(count: 1000, seed: 1)))
    }

    @Test func badRangeShiftsTheStartAndSendsWhatItClaims() throws {
        let server = try FixtureServer()
        let content = FixtureContent.bytes(count: 1000, seed: 1)
        let result = try Curl.run(server.url("/gen/1000?bad-range=1"), "-r", "10-19")
        #expect(result.status == 206)
        #expect(result.header("Content-Range") == "bytes 11-19/1000")
        #expect(result.body == Data(content[11..<20]))
        let single = try Curl.run(server.url("/gen/1000?bad-range=1"), "-r", "10-10")
        #expect(single.header("Content-Range") == "bytes 11-11/1000")
        let whole = try Curl.run(server.url("/gen/1000?bad-range=1"))
        #expect(whole.status == 200)
    }

    @Test func dropAfterClosesTheFirstResponsesOnly() throws {
        let server = try FixtureServer()
        let url = server.url("/gen/100000?drop-after=1000&drops=2")
        let head = try Curl.run(url, "-I")
        #expect(head.status == 200)
        for _ in 0..<2 {
            let dropped = try Curl.run(url)
            #expect(dropped.exitCode == 18)  // CURLE_PARTIAL_FILE
            #expect(dropped.body == Data(FixtureContent.bytes(count: 1000, seed: 1)))
        }
        let complete = try Curl.run(url)
        #expect(complete.exitCode == 0)
        #expect(complete.body == Data(FixtureContent.bytes(count: 100_000, seed: 1)))
        // Another key has its own counter; a body shorter than N is not cut and uses no drop.
        let short = try Curl.run(server.url("/gen/500?drop-after=1000"))
        #expect(short.exitCode == 0)
        let other = try Curl.run(server.url("/gen/100000?drop-after=10"))
        #expect(other.exitCode == 18)
        #expect(server.stats.bodyBytesSent == 2000 + 100_000 + 500 + 10)
    }

    @Test func stopEndsAStalledConnection() throws {
        let stalled = DispatchSemaphore(value: 0)
        var configuration = FixtureServer.Configuration()
        configuration.requestLog = { line in
            if line.contains("stalled after") { stalled.signal() }
        }
        let server = try FixtureServer(configuration)
        let curl = try Curl.start([
            "-sS", "--max-time", "120", "-o", "/dev/null",
            server.url("/gen/100000?stall-after=100").absoluteString,
        ])
        #expect(stalled.wait(timeout: .now() + 60) == .success)
        #expect(server.stats.bodyBytesSent == 100)
        server.stop()
        curl.waitUntilExit()
        // 18: the transfer ended with bytes missing. 28 would mean curl gave up by itself (the stall lasted).
        #expect(curl.terminationStatus == 18)
    }

    @Test func stallsCountPerKeyAndClientCanLeave() throws {
        let server = try FixtureServer()
        let stalled = try RawClient(port: server.port)
        stalled.send("GET /gen/1000?stall-after=10 HTTP/1.1\r\nHost: x\r\n\r\n")
        let partial = stalled.readUntil(count: 10, afterHead: true)
        #expect(partial == FixtureContent.bytes(count: 10, seed: 1))
        stalled.close()  // the server notices the client leaving and ends the connection thread
        let second = try Curl.run(server.url("/gen/1000?stall-after=10"))
        #expect(second.exitCode == 0)
        #expect(second.body == Data(FixtureContent.bytes(count: 1000, seed: 1)))
    }

    @Test func stopInterruptsWaitsAndClosesIdleConnections() throws {
        let server = try FixtureServer()
        let idle = try RawClient(port: server.port)
        let waiting = try RawClient(port: server.port)
        waiting.send("GET /gen/100?ttfb=600000 HTTP/1.1\r\nHost: x\r\n\r\n")
        let slow = try RawClient(port: server.port)
        slow.send("GET /gen/1000000?rate=10 HTTP/1.1\r\nHost: x\r\n\r\n")
        server.stop()
        #expect(idle.readToEnd().isEmpty)
        #expect(idle.sawEnd)
        #expect(waiting.readToEnd().isEmpty)
        #expect(waiting.sawEnd)
        _ = slow.readToEnd()  // whatever arrived before the stop; what matters is that it ends
        #expect(slow.sawEnd)
    }

    @Test func deallocatingTheServerStopsIt() throws {
        var server: FixtureServer? = try FixtureServer()
        let client = try RawClient(port: server!.port)
        client.send("GET /gen/1000?stall-after=10 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.readUntil(count: 10, afterHead: true) == FixtureContent.bytes(count: 10, seed: 1))
        server = nil
        #expect(client.readToEnd().count == 10)
        #expect(client.sawEnd)
    }

    @Test func injectedStatusesWithRetryAfter() throws {
        let server = try FixtureServer()
        let url = server.url("/gen/100?status=503&statuses=2&retry-after=7")
        let first = try Curl.run(url, "-I")
        #expect(first.status == 503)
        #expect(first.header("Retry-After") == "7")
        let second = try Curl.run(url)
        #expect(second.status == 503)
        #expect(String(decoding: second.body, as: UTF8.self).hasPrefix("503"))
        let third = try Curl.run(url)
        #expect(third.status == 200)
        #expect(third.body == Data(FixtureContent.bytes(count: 100, seed: 1)))

        let always = server.url("/gen/100?status=500")
        for _ in 0..<3 {
            #expect(try Curl.run(always).status == 500)
        }
        #expect(server.stats.bodyBytesSent == 100)
    }

    @Test func headStatusAffectsOnlyHead() throws {
        let server = try FixtureServer()
        let url = server.url("/gen/1000?head=405")
        let head = try Curl.run(url, "-I")
        #expect(head.status == 405)
        #expect(head.header("Content-Length") == nil)
        let get = try Curl.run(url)
        #expect(get.status == 200)
        #expect(get.body == Data(FixtureContent.bytes(count: 1000, seed: 1)))
    }

    @Test func redirectChainKeepsTheQuery() throws {
        let server = try FixtureServer()
        let followed = try Curl.run(
            [
                "-sS", "-L", "-w", "%{num_redirects} %{url_effective}", "-o", "/dev/null",
                server.url("/redirect/2/gen/100?seed=5").absoluteString,
            ])
        #expect(
            String(decoding: followed.body, as: UTF8.self)
                == "3 \(server.url("/gen/100?seed=5").absoluteString)")

        let content = try Curl.run(server.url("/redirect/2/gen/100?seed=5"), "-L")
        #expect(content.body == Data(FixtureContent.bytes(count: 100, seed: 5)))

        let hop = try Curl.run(server.url("/redirect/1/gen/100?code=307"))
        #expect(hop.status == 307)
        #expect(hop.header("Location") == "/redirect/0/gen/100?code=307")
        let last = try Curl.run(server.url("/redirect/0/gen/100?code=308"))
        #expect(last.status == 308)
        #expect(last.header("Location") == "/gen/100?code=308")

        let target = "http://127.0.0.1:1/x?y=1"
        let to = try Curl.run(server.url("/redirect-to?url=http%3A%2F%2F127.0.0.1%3A1%2Fx%3Fy%3D1&code=301"))
        #expect(to.status == 301)
        #expect(to.header("Location") == target)
    }

    @Test func redirectLoopNeverEnds() throws {
        let server = try FixtureServer()
        let hop = try Curl.run(server.url("/redirect-loop?x=1"))
        #expect(hop.status == 302)
        #expect(hop.header("Location") == "/redirect-loop?x=1")
        let followed = try Curl.run(server.url("/redirect-loop"), "-L", "--max-redirs", "5")
        #expect(followed.exitCode == 47)  // CURLE_TOO_MANY_REDIRECTS
        #expect(server.stats.requests == 7)
    }

    /// `largest-answer=N`: the 206 to an open-ended range has at most N bytes, from the range's start,
    /// its Content-Range saying so; a range with both ends, and a 200, are whole.
    @Test func largestAnswerCapsARange() throws {
        let server = try FixtureServer()
        let content = FixtureContent.bytes(count: 1000, seed: 1)
        let open = try Curl.run(server.url("/gen/1000?largest-answer=10"), "-r", "5-")
        #expect(open.status == 206)
        #expect(open.header("Content-Range") == "bytes 5-14/1000")
        #expect(open.body == Data(content[5...14]))
        let closed = try Curl.run(server.url("/gen/1000?largest-answer=10"), "-r", "5-99")
        #expect(closed.body == Data(content[5...99]))
        let whole = try Curl.run(server.url("/gen/1000?largest-answer=10"))
        #expect(whole.body == Data(content))
    }

    /// `whole-from=OFFSET`: a range from OFFSET on is answered 200 with the whole file and the same
    /// validators; one that starts before it is a 206 as usual.
    @Test func wholeFromAnswersLaterRangesWithTheWholeFile() throws {
        let server = try FixtureServer()
        let content = FixtureContent.bytes(count: 1000, seed: 1)
        let early = try Curl.run(server.url("/gen/1000?whole-from=500"), "-r", "499-600")
        #expect(early.status == 206)
        #expect(early.body == Data(content[499...600]))
        let late = try Curl.run(server.url("/gen/1000?whole-from=500"), "-r", "500-600")
        #expect(late.status == 200)
        #expect(late.header("Content-Range") == nil)
        #expect(late.header("ETag") == early.header("ETag"))
        #expect(late.body == Data(content))
    }

    @Test func corruptFlipsOneByteInBodiesThatIncludeIt() throws {
        let server = try FixtureServer()
        var expected = FixtureContent.bytes(count: 1000, seed: 1)
        expected[10] ^= 0xFF
        let whole = try Curl.run(server.url("/gen/1000?corrupt=10"))
        #expect(whole.body == Data(expected))
        let including = try Curl.run(server.url("/gen/1000?corrupt=10"), "-r", "5-15")
        #expect(including.body == Data(expected[5...15]))
        let excluding = try Curl.run(server.url("/gen/1000?corrupt=10"), "-r", "20-29")
        #expect(excluding.body == Data(FixtureContent.bytes(count: 1000, seed: 1)[20...29]))
    }

    @Test func badParametersAndUnknownPathsAreErrors() throws {
        let server = try FixtureServer()
        #expect(try Curl.run(server.url("/gen/100?rate=fast")).status == 400)
        #expect(try Curl.run(server.url("/gen/100?code=300")).status == 400)
        #expect(try Curl.run(server.url("/gen/100?unknown=1")).status == 200)
        #expect(try Curl.run(server.url("/gen/ten")).status == 404)
        #expect(try Curl.run(server.url("/nothing")).status == 404)
        #expect(try Curl.run(server.url("/gen/10"), "-X", "POST").status == 405)
        #expect(try Curl.run(server.url("/files/x")).status == 404)  // no files directory

        let client = try RawClient(port: server.port)
        client.send("GARBAGE\r\n\r\n")
        let response = try #require(client.readResponse())
        #expect(response.head.hasPrefix("HTTP/1.1 400"))
    }

    // MARK: Statistics

    @Test func statsEndpointReportsTotalsWithoutCountingItself() throws {
        let server = try FixtureServer()
        _ = try Curl.run(server.url("/gen/1234"))
        _ = try Curl.run(server.url("/gen/10"), "-I")
        _ = try Curl.run(server.url("/nothing"))
        let expected = FixtureStats(requests: 3, bodyBytesSent: 1234, connections: 3)
        #expect(server.stats == expected)
        for _ in 0..<2 {
            let json = try Curl.run(server.url("/__stats"))
            #expect(json.header("Content-Type") == "application/json")
            #expect(try JSONDecoder().decode(FixtureStats.self, from: json.body) == expected)
            let keys = try JSONSerialization.jsonObject(with: json.body) as? [String: Int]
            #expect(keys == ["requests": 3, "bodyBytesSent": 1234, "connections": 3])
        }
        server.resetStats()
        #expect(server.stats == FixtureStats())
    }

    /// The peak of connections open at once: three held open together count three; after a reset
    /// it starts from those still open.
    @Test func peakOpenConnectionsCountsConnectionsHeldTogether() throws {
        let server = try FixtureServer()
        let clients = try (0..<3).map { _ in try RawClient(port: server.port) }
        // An answer on each shows the server has accepted it.
        for client in clients {
            client.send("GET /gen/10 HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(client.readResponse() != nil)
        }
        #expect(server.peakOpenConnections == 3)
        server.resetStats()
        #expect(server.peakOpenConnections == 3)
        #expect(server.stats == FixtureStats())
    }

    @Test func manyConcurrentConnections() throws {
        let server = try FixtureServer()
        let count = 150
        let clients = try (0..<count).map { _ in try RawClient(port: server.port) }
        // Every connection is open before any request is sent, so all of them are served at once.
        for (index, client) in clients.enumerated() {
            client.send("GET /gen/\(1000 + index)?seed=\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
        }
        for (index, client) in clients.enumerated() {
            let response = try #require(client.readResponse())
            #expect(response.body == FixtureContent.bytes(count: 1000 + index, seed: UInt64(index)))
        }
        #expect(server.stats.connections == count)
        #expect(server.stats.requests == count)
    }

    // MARK: Rates

    @Test func rateLimitedTransfersStillDeliverTheContent() throws {
        var configuration = FixtureServer.Configuration()
        configuration.totalRate = 2_000_000
        let server = try FixtureServer(configuration)
        let result = try Curl.run(server.url("/gen/50000?rate=1000000&chunked=1&seed=8"))
        #expect(result.body == Data(FixtureContent.bytes(count: 50000, seed: 8)))
    }

    @Test func tokenBucketArithmetic() {
        var bucket = TokenBucket(bytesPerSecond: 1000, burst: 100)
        // Starts empty: 100 bytes at 1000 B/s cost 0.1 s.
        #expect(bucket.reserve(100, now: 0) == 100_000_000)
        // Reservations queue up behind each other (the bucket goes into debt).
        #expect(bucket.reserve(100, now: 0) == 200_000_000)
        // After the debt is paid, idle time saves up at most `burst` bytes.
        #expect(bucket.reserve(100, now: 10_200_000_000) == 0)
        #expect(bucket.reserve(50, now: 10_200_000_000) == 50_000_000)
        // Bytes reserved and not sent (the peer left) are given back: the next waits as if they
        // had never been reserved, and the bucket never holds more than `burst`.
        var shared = TokenBucket(bytesPerSecond: 1000, burst: 100)
        #expect(shared.reserve(100, now: 0) == 100_000_000)
        #expect(shared.reserve(100, now: 0) == 200_000_000)
        shared.refund(100)
        #expect(shared.reserve(100, now: 0) == 200_000_000)
        shared.refund(1000)
        #expect(shared.reserve(100, now: 0) == 0)
        #expect(TokenBucket.sliceSize(forRate: 10) == 1)
        #expect(TokenBucket.sliceSize(forRate: 20_000) == 1000)
        #expect(TokenBucket.sliceSize(forRate: 1_000_000_000) == 65536)
    }

    @Test func slowEveryPicksEveryKthConnection() throws {
        let behaviour = try Behaviour(query: "rate=5000&slow-every=3&slow-rate=10")
        #expect((1...7).map { behaviour.rate(forConnection: $0) } == [5000, 5000, 10, 5000, 5000, 10, 5000])
        let unlimited = try Behaviour(query: "slow-every=2&slow-rate=10")
        #expect(unlimited.rate(forConnection: 1) == nil)
        #expect(unlimited.rate(forConnection: 2) == 10)
        #expect(throws: Behaviour.Invalid.self) { try Behaviour(query: "slow-every=2") }
    }

    // MARK: Files, TLS, IPv6

    @Test func filesAreServedWithRangesAndValidators() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "fixture-files-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let bytes = FixtureContent.bytes(count: 70_000, seed: 42)
        try Data(bytes).write(to: directory.appendingPathComponent("data.bin"))
        var configuration = FixtureServer.Configuration()
        configuration.filesDirectory = directory.path
        let server = try FixtureServer(configuration)

        let whole = try Curl.run(server.url("/files/data.bin"))
        #expect(whole.status == 200)
        #expect(whole.body == Data(bytes))
        let etag = try #require(whole.header("ETag"))
        #expect(etag.hasPrefix("\"file-70000-"))
        let part = try Curl.run(
            server.url("/files/data.bin?corrupt=100"), "-r", "100-199", "-H", "If-Range: \(etag)")
        #expect(part.status == 206)
        var expected = Array(bytes[100..<200])
        expected[0] ^= 0xFF
        #expect(part.body == Data(expected))
        #expect(try Curl.run(server.url("/files/missing.bin")).status == 404)
        #expect(try Curl.run(server.url("/files/..%2Fdata.bin")).status == 404)
    }

    @Test func httpsWithTheTestCA() throws {
        var configuration = FixtureServer.Configuration()
        configuration.tls = true
        let server = try FixtureServer(configuration)
        #expect(server.baseURL.scheme == "https")
        let ca = FixturePaths.certificatesDirectory + "/ca.pem"
        let result = try Curl.run(server.url("/gen/300000?seed=6"), "--cacert", ca)
        #expect(result.exitCode == 0)
        #expect(result.body == Data(FixtureContent.bytes(count: 300_000, seed: 6)))
        let byName = try Curl.run(URL(string: "https://localhost:\(server.port)/gen/10")!, "--cacert", ca)
        #expect(byName.exitCode == 0)
        let dropped = try Curl.run(server.url("/gen/300000?drop-after=1000"), "--cacert", ca)
        #expect(dropped.exitCode != 0)
        #expect(dropped.body.count == 1000)
        let untrusted = try Curl.run(server.url("/gen/10"))
        #expect(untrusted.exitCode == 60)  // CURLE_PEER_FAILED_VERIFICATION
    }

    @Test(arguments: [FixtureServer.Certificate.wrongHost, .expired])
    func httpsRejectsBadCertificates(_ certificate: FixtureServer.Certificate) throws {
        var configuration = FixtureServer.Configuration()
        configuration.tls = true
        configuration.certificate = certificate
        let server = try FixtureServer(configuration)
        let ca = FixturePaths.certificatesDirectory + "/ca.pem"
        let result = try Curl.run(server.url("/gen/10"), "--cacert", ca)
        #expect(result.exitCode == 60)
        #expect(server.stats.requests == 0)
        if certificate == .wrongHost {
            let port = server.port
            let named = try Curl.run(
                URL(string: "https://wrong.example:\(port)/gen/10")!, "--cacert", ca, "--resolve",
                "wrong.example:\(port):127.0.0.1")
            #expect(named.exitCode == 0)
        }
    }

    @Test(.enabled(if: RawClient.canBindIPv6Loopback))
    func ipv6Loopback() throws {
        var configuration = FixtureServer.Configuration()
        configuration.host = "::1"
        let server = try FixtureServer(configuration)
        #expect(server.baseURL.absoluteString == "http://[::1]:\(server.port)")
        let result = try Curl.run(server.url("/gen/100"))
        #expect(result.body == Data(FixtureContent.bytes(count: 100, seed: 1)))
    }

    @Test func certificatesDirectoryIsFound() {
        let directory = FixturePaths.certificatesDirectory
        for name in ["ca.pem", "server.pem", "server.key", "wronghost.pem", "expired.pem", "make-certs.sh"] {
            #expect(FileManager.default.fileExists(atPath: directory + "/" + name), "\(name)")
        }
    }
}

// MARK: - curl

/// Runs `curl` and captures the status, headers and body of the last response.
private struct Curl {
    var exitCode: Int32
    /// Header blocks, one per response (redirects and 1xx make several).
    var headerBlocks: [[String]]
    var body: Data
    var stderr: String

    /// The status code of the last response (0 if none).
    var status: Int {
        guard let line = headerBlocks.last?.first else { return 0 }
        let parts = line.split(separator: " ")
        return parts.count > 1 ? Int(parts[1]) ?? 0 : 0
    }

    /// The value of header `name` in the last response.
    func header(_ name: String) -> String? {
        for line in headerBlocks.last?.dropFirst() ?? [] {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == name.lowercased() {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    /// GET (or whatever `extra` says) `url`, with headers and body captured.
    static func run(_ url: URL, _ extra: String...) throws -> Curl {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fixture-curl-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let headers = folder.appendingPathComponent("headers").path
        let body = folder.appendingPathComponent("body").path
        var result = try run(
            ["-sS", "--max-time", "60", "-D", headers, "-o", body] + extra + [url.absoluteString])
        result.body = (try? Data(contentsOf: URL(fileURLWithPath: body))) ?? Data()
        let text = (try? String(contentsOfFile: headers, encoding: .utf8)) ?? ""
        result.headerBlocks = text.components(separatedBy: "\r\n\r\n").filter { !$0.isEmpty }.map {
            $0.components(separatedBy: "\r\n")
        }
        return result
    }

    /// Runs curl with exactly `arguments`; `body` is its stdout.
    static func run(_ arguments: [String]) throws -> Curl {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fixture-curl-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("stdout")
        let err = folder.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let process = try start(
            arguments, stdout: FileHandle(forWritingTo: out), stderr: FileHandle(forWritingTo: err))
        process.waitUntilExit()
        return Curl(
            exitCode: process.terminationStatus, headerBlocks: [],
            body: (try? Data(contentsOf: out)) ?? Data(),
            stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? "")
    }

    /// Starts curl without waiting; output goes to the given handles (or nowhere).
    static func start(_ arguments: [String], stdout: FileHandle? = nil, stderr: FileHandle? = nil) throws
        -> Process
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["curl"] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdout ?? FileHandle.nullDevice
        process.standardError = stderr ?? FileHandle.nullDevice
        try process.run()
        return process
    }
}

// MARK: - Raw sockets

/// A blocking HTTP/1.1 client over a plain socket, for what curl cannot show: many simultaneous
/// connections, raw framing, malformed requests.
private final class RawClient {
    struct ConnectFailed: Error {}

    private var fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int, host: String = "127.0.0.1") throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ConnectFailed() }
        // A generous receive timeout, so a server bug fails the test instead of hanging it.
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw ConnectFailed()
        }
    }

    deinit { close() }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Whether the last read found the end of the stream (or a reset) rather than timing out.
    private(set) var sawEnd = false

    /// Reads more bytes into the buffer; false at end of stream, error or timeout.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        sawEnd = count == 0 || (count < 0 && errno == ECONNRESET)
        guard count > 0 else { return false }
        buffer += chunk[..<count]
        return true
    }

    /// One response head (through the empty line).
    func readHead() -> String? {
        let separator = Array("\r\n\r\n".utf8)
        while true {
            if let found = buffer.firstRange(of: separator) {
                let head = String(decoding: buffer[..<found.upperBound], as: UTF8.self)
                buffer.removeFirst(found.upperBound)
                return head
            }
            if !fill() { return nil }
        }
    }

    /// One response with a Content-Length body.
    func readResponse() -> (head: String, body: [UInt8])? {
        guard let head = readHead() else { return nil }
        let lengthLine = head.components(separatedBy: "\r\n").first {
            $0.lowercased().hasPrefix("content-length:")
        }
        let length =
            lengthLine.flatMap {
                Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
            } ?? 0
        while buffer.count < length {
            if !fill() { return nil }
        }
        let body = Array(buffer[..<length])
        buffer.removeFirst(length)
        return (head, body)
    }

    /// Everything up to and including `suffix`.
    func readUntil(suffix: [UInt8]) -> [UInt8] {
        while !buffer.ends(with: suffix) && fill() {}
        defer { buffer = [] }
        return buffer
    }

    /// `count` bytes (after the response head when `afterHead`).
    func readUntil(count: Int, afterHead: Bool) -> [UInt8] {
        if afterHead && readHead() == nil { return [] }
        while buffer.count < count && fill() {}
        return Array(buffer.prefix(count))
    }

    /// Everything until the server closes (or the timeout).
    func readToEnd() -> [UInt8] {
        while fill() {}
        defer { buffer = [] }
        return buffer
    }

    /// Whether `::1` can be bound here (some containers have no IPv6).
    static var canBindIPv6Loopback: Bool {
        var configuration = FixtureServer.Configuration()
        configuration.host = "::1"
        return (try? FixtureServer(configuration)) != nil
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
