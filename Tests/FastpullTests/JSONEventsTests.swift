import Foundation
import Testing

@testable import Fastpull
@testable import FastpullCommandLine
@testable import FastpullEngine

@Suite("--json event encoding")
struct JSONEventsTests {
    let url = URL(string: "https://h.test/x.iso")!
    let hex = String(repeating: "ab", count: 32)

    func object(_ event: Event) throws -> [String: Any] {
        let line = JSONEvents.line(event, index: 2, url: url, elapsed: 1.25)
        #expect(!line.contains("\n"))
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    var probe: Event.Probe {
        Event.Probe(
            url: url, finalURL: URL(string: "https://cdn.test/x.iso")!, size: 1000, acceptsRanges: true,
            etag: "\"e1\"", lastModified: nil, contentDisposition: "attachment; filename=\"x.iso\"",
            offeredDigests: [Event.OfferedDigest(checksum: .sha256(hex), header: "Repr-Digest")],
            ignoredDigests: [Event.IgnoredDigest(header: "x-amz-checksum-sha256", reason: "composite")])
    }

    var report: Report {
        Report(
            url: url, finalURL: url, outputPath: "/tmp/x.iso", size: 1000, seconds: 0.5, bytesFetched: 1200,
            sha256: hex, verifiedChecksums: [.sha256(hex)], connections: 4, segments: 8, retries: 1,
            resumedBytes: 100, rangesSupported: true, digests: ["sha256": hex, "md5": "00"], checks: [],
            transferSeconds: 0.4, hashTailSeconds: 0.01)
    }

    /// Every event with the fields its line must have, and their JSON types.
    var cases: [(Event, [String: String])] {
        [
            (
                .probe(probe),
                [
                    "finalURL": "string", "size": "number", "ranges": "bool", "etag": "string",
                    "lastModified": "null", "contentDisposition": "string", "digests": "array",
                    "ignoredDigests": "array",
                ]
            ),
            (
                .plan(Event.Plan(probe: probe, segments: [0..<600, 600..<1000], connections: 2)),
                [
                    "size": "number", "ranges": "bool", "segments": "number", "segmentSize": "number",
                    "connections": "number", "resumedBytes": "number",
                ]
            ),
            (
                .progress(
                    Event.Progress(bytes: 250, totalBytes: 1000, bytesPerSecond: 100.7, connections: 3)),
                [
                    "bytes": "number", "total": "number", "percent": "number", "speed": "number",
                    "eta": "number",
                    "connections": "number",
                ]
            ),
            (.resumed(keptBytes: 5, totalBytes: 10), ["keptBytes": "number", "total": "number"]),
            (.restarting(reason: "changed"), ["reason": "string"]),
            (.warning("careful"), ["message": "string"]),
            (
                .retry(connection: 1, reason: "reset", delaySeconds: 0.25),
                ["connection": "number", "reason": "string", "delay": "number"]
            ),
            (
                .steal(from: 1, to: 2, offset: 10, end: 20, hedged: true),
                ["from": "number", "to": "number", "offset": "number", "end": "number", "hedged": "bool"]
            ),
            (.connections(4), ["connections": "number"]),
            (
                .verified(
                    Event.Verification(
                        digests: ["sha256": hex],
                        checks: [
                            .init(expected: .sha256(hex), source: .user, verdict: .matched),
                            .init(
                                expected: nil, source: .header("Digest"), verdict: .ignored(reason: "weak")),
                        ])),
                ["digests": "object", "checks": "array", "ignored": "array"]
            ),
            (
                .finished(Event.Finished(report)),
                [
                    "output": "string", "size": "number", "seconds": "number", "speed": "number",
                    "bytesFetched": "number", "digests": "object", "verified": "array",
                    "connections": "number",
                    "retries": "number", "resumedBytes": "number", "alreadyPresent": "bool",
                ]
            ),
            (
                .failed(FastpullError(.httpStatus, "HTTP 404")),
                [
                    "code": "number", "error": "string", "message": "string", "httpStatus": "null",
                    "failedURL": "null",
                ]
            ),
        ]
    }

    /// The JSON type of every field of a line, told apart by a strict decoder (a number never decodes
    /// as a Bool there).
    enum Node: Decodable {
        case null, bool, number, string, array, object

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if (try? container.decode(Bool.self)) != nil {
                self = .bool
            } else if (try? container.decode(Double.self)) != nil {
                self = .number
            } else if (try? container.decode(String.self)) != nil {
                self = .string
            } else if (try? container.decode([Node].self)) != nil {
                self = .array
            } else {
                _ = try container.decode([String: Node].self)
                self = .object
            }
        }

        var name: String { "\(self)" }
    }

    func types(_ event: Event) throws -> [String: String] {
        let line = JSONEvents.line(event, index: 2, url: url, elapsed: 1.25)
        return try JSONDecoder().decode([String: Node].self, from: Data(line.utf8)).mapValues(\.name)
    }

    @Test func everyEventHasTheCommonAndItsOwnFields() throws {
        for (event, fields) in cases {
            let json = try object(event)
            let name = JSONEvents.name(of: event)
            #expect(json["event"] as? String == name)
            #expect(json["index"] as? Int == 2)
            #expect(json["url"] as? String == url.absoluteString)
            #expect(json["elapsed"] as? Double == 1.25)
            #expect(
                Set(json.keys) == Set(fields.keys).union(["event", "index", "url", "elapsed"]), "\(name)")
            let types = try types(event)
            for (key, type) in fields {
                #expect(types[key] == type, "\(name).\(key)")
            }
        }
    }

    @Test func fieldsKeepTheirOrder() {
        let line = JSONEvents.line(.connections(3), index: 0, url: url, elapsed: 0)
        #expect(
            line
                == "{\"event\":\"connections\",\"index\":0,\"url\":\"https://h.test/x.iso\",\"elapsed\":0,\"connections\":3}"
        )
    }

    @Test func valuesAreWhatTheyShouldBe() throws {
        let progress = try object(
            .progress(Event.Progress(bytes: 250, totalBytes: 1000, bytesPerSecond: 100.7, connections: 3)))
        #expect(progress["percent"] as? Double == 25)
        #expect(progress["speed"] as? Int == 100)
        #expect(progress["eta"] as? Double == 7)
        let unknown = try object(
            .progress(Event.Progress(bytes: 5, totalBytes: nil, bytesPerSecond: 0, connections: 1)))
        #expect(unknown["total"] is NSNull && unknown["percent"] is NSNull && unknown["eta"] is NSNull)

        let failed = try object(.failed(FastpullError(.integrity, "sha256 mismatch")))
        #expect(failed["code"] as? Int == 6)
        #expect(failed["error"] as? String == "integrity")
        var answered = FastpullError(.httpStatus, "HTTP 404 Not Found")
        answered.httpStatus = 404
        answered.url = URL(string: "https://user:secret@mirror.test/f.iso")
        let notFound = try object(.failed(answered))
        #expect(notFound["httpStatus"] as? Int == 404)
        #expect((notFound["failedURL"] as? String)?.contains("secret") == false)
        #expect((notFound["failedURL"] as? String)?.contains("mirror.test/f.iso") == true)

        let finished = try object(.finished(Event.Finished(report, alreadyPresent: true)))
        #expect(finished["alreadyPresent"] as? Bool == true)
        #expect((finished["digests"] as? [String: String])?["sha256"] == hex)
        #expect(finished["verified"] as? [String] == ["sha256=\(hex)"])
        #expect(finished["speed"] as? Int == 2000)
        // A download that computed no SHA-256 says so by leaving it out, not with an empty value.
        var unhashed = report
        unhashed.sha256 = ""
        unhashed.digests = ["md5": "00"]
        let plain = try object(.finished(Event.Finished(unhashed)))
        #expect(plain["digests"] as? [String: String] == ["md5": "00"])

        let probe = try object(.probe(probe))
        let digest = try #require((probe["digests"] as? [[String: String]])?.first)
        #expect(digest == ["algorithm": "sha256", "value": hex, "header": "Repr-Digest"])

        let verified = try object(cases[9].0)
        let check = try #require((verified["checks"] as? [[String: String]])?.first)
        #expect(check == ["algorithm": "sha256", "value": hex, "source": "--checksum"])
        #expect((verified["ignored"] as? [[String: String]])?.first?["reason"] == "weak")
    }

    @Test func stringsAreEscaped() throws {
        let nasty = "quote\" back\\ nl\n tab\t bell\u{7} del\u{7F} é ✓"
        let json = try object(.warning(nasty))
        #expect(json["message"] as? String == nasty)
        #expect(JSONValue.number(.nan).text == "null")
        #expect(JSONValue.number(.infinity).text == "null")
        #expect(JSONValue.number(1.5).text == "1.5")
        #expect(JSONValue.number(-0.0001).text == "0")
    }

    @Test func summaryLine() throws {
        let line = JSONEvents.summary(files: 3, succeeded: 2, failed: 1, exitCode: 4, elapsed: 2)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(json["event"] as? String == "summary")
        #expect(json["files"] as? Int == 3)
        #expect(json["exitCode"] as? Int == 4)
        #expect(json["dryRun"] as? Bool == false)
    }

    @Test func completionMapCoversTheFile() {
        let segments = [
            Segment(start: 0, end: 100, written: 100), Segment(start: 100, end: 200, written: 50),
            Segment(start: 200, end: 400, written: 0),
        ]
        let map = Download.completionMap(of: segments, cells: 4)
        #expect(map == [1, 0.5, 0, 0])
        #expect(Download.completionMap(of: segments, cells: 1) == [0.375])
        #expect(Download.completionMap(of: segments, cells: 8).count == 8)
        #expect(Download.completionMap(of: [], cells: 3) == [0, 0, 0])
        let many = Download.completionMap(of: segments, cells: 1000)
        #expect(many.count == 1000)
        #expect(many.allSatisfy { (0...1).contains($0) })
    }
}

/// The public face of an event: its kind, and what it carries under the property of that name, for a
/// caller whose `switch` over the kind has a `default` (so kinds can be added without breaking it).
@Suite("Event kinds")
struct EventKindTests {
    @Test func everyKindIsDistinctAndReadsBackWhatItCarries() {
        let samples =
            JSONEventsTests().cases.map(\.0) + [
                .exchange(
                    Event.Exchange(request: ["GET / HTTP/1.1"], response: ["HTTP/1.1 206 Partial Content"])),
                .sourceDropped(url: URL(string: "http://a.test/f")!, reason: "slow"),
                .pieceFailed(offset: 0, length: 10, sources: []),
            ]
        // One sample of each kind, each a kind of its own, named as --json names it.
        #expect(Set(samples.map(\.kind)).count == samples.count)
        #expect(samples.allSatisfy { JSONEvents.name(of: $0) == $0.kind.rawValue })
        for event in samples {
            // Exactly one accessor carries something: the one of the event's kind.
            let carried: [(Event.Kind, Bool)] = [
                (.probe, event.probe != nil), (.plan, event.plan != nil), (.progress, event.progress != nil),
                (.resumed, event.resumed != nil), (.restarting, event.restartReason != nil),
                (.warning, event.warning != nil), (.retry, event.retry != nil),
                (.takeOver, event.takeOver != nil), (.connections, event.connections != nil),
                (.verified, event.verified != nil), (.finished, event.finished != nil),
                (.failed, event.error != nil), (.exchange, event.exchange != nil),
                (.sourceDropped, event.sourceDropped != nil), (.pieceFailed, event.pieceFailed != nil),
            ]
            #expect(carried.filter(\.1).map(\.0) == [event.kind], "\(event)")
        }
        let retry = Event.retry(connection: 3, reason: "reset", delaySeconds: 0.5)
        #expect(retry.retry?.reason == "reset" && retry.retry?.delaySeconds == 0.5)
        #expect(Event.warning("w").warning == "w")
    }
}
