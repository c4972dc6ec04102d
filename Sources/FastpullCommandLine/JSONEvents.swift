import Fastpull
import FastpullHTTP
import FoundationEssentials

extension JSONValue {
    fileprivate init(_ value: Int64?) { self = value.map { .integer($0) } ?? .null }
    fileprivate init(_ value: String?) { self = value.map { .string($0) } ?? .null }
    fileprivate init(_ value: Double?) { self = value.map { .number($0) } ?? .null }

    fileprivate static func digests(_ digests: [String: String]) -> JSONValue {
        .object(digests.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })
    }
}

/// The `--json` output: one JSON object a line for every ``Event``, and a last `summary` line.
///
/// Every event line starts with `event` (its name), `index` (the file's 0-based position among the
/// run's downloads), `url` (as asked for) and `elapsed` (seconds since the command started); the other
/// fields depend on the event and are listed in the README. Field names never change; new fields may
/// be added.
package enum JSONEvents {
    /// The event's name in the `event` field.
    package static func name(of event: Event) -> String { event.kind.rawValue }

    /// The line for `event` of download `index` (without the newline).
    package static func line(_ event: Event, index: Int, url: URL, elapsed: Double) -> String {
        object(event, index: index, url: url, elapsed: elapsed).text
    }

    /// The JSON object for `event` of download `index`.
    package static func object(_ event: Event, index: Int, url: URL, elapsed: Double) -> JSONValue {
        var fields: [(String, JSONValue)] = [
            ("event", .string(name(of: event))), ("index", .integer(Int64(index))),
            ("url", .string(url.absoluteString)), ("elapsed", .number(elapsed)),
        ]
        fields += self.fields(of: event)
        return .object(fields)
    }

    /// The event-specific fields.
    static func fields(of event: Event) -> [(String, JSONValue)] {
        switch event.detail {
        case .probe(let probe):
            return probeFields(probe)
        case .plan(let plan):
            let largest = plan.segments.map { $0.upperBound - $0.lowerBound }.max()
            return [
                ("size", JSONValue(plan.probe.size)), ("ranges", .bool(plan.probe.acceptsRanges)),
                ("segments", .integer(Int64(plan.segments.count))), ("segmentSize", JSONValue(largest)),
                ("connections", .integer(Int64(plan.connections))),
                ("resumedBytes", .integer(plan.resumedBytes)),
            ]
        case .progress(let progress):
            return [
                ("bytes", .integer(progress.bytes)), ("total", JSONValue(progress.totalBytes)),
                ("percent", JSONValue(progress.fraction.map { ($0 * 1000).rounded() / 10 })),
                ("speed", .integer(Int64(progress.bytesPerSecond.isFinite ? progress.bytesPerSecond : 0))),
                ("eta", JSONValue(progress.secondsLeft.map { $0.rounded() })),
                ("connections", .integer(Int64(progress.connections))),
            ]
        case .resumed(let kept, let total):
            return [("keptBytes", .integer(kept)), ("total", .integer(total))]
        case .restarting(let reason):
            return [("reason", .string(reason))]
        case .warning(let message):
            return [("message", .string(message))]
        case .retry(let connection, let reason, let delay):
            return [
                ("connection", .integer(Int64(connection))), ("reason", .string(reason)),
                ("delay", .number(delay)),
            ]
        case .steal(let from, let to, let offset, let end, let hedged):
            return [
                ("from", .integer(Int64(from))), ("to", .integer(Int64(to))), ("offset", .integer(offset)),
                ("end", .integer(end)), ("hedged", .bool(hedged)),
            ]
        case .connections(let count):
            return [("connections", .integer(Int64(count)))]
        case .verified(let verification):
            var matched: [JSONValue] = []
            var ignored: [JSONValue] = []
            for check in verification.checks {
                switch check.verdict {
                case .matched:
                    guard let expected = check.expected else { continue }
                    matched.append(
                        .object([
                            ("algorithm", .string(expected.algorithm)), ("value", .string(expected.hexValue)),
                            ("source", .string(check.source.commandLineName)),
                        ]))
                case .ignored(let reason):
                    ignored.append(
                        .object([
                            ("source", .string(check.source.commandLineName)), ("reason", .string(reason)),
                        ]))
                }
            }
            return [
                ("digests", .digests(verification.digests)), ("checks", .array(matched)),
                ("ignored", .array(ignored)),
            ]
        case .finished(let finished):
            return [
                ("output", .string(finished.outputPath)), ("size", .integer(finished.size)),
                ("seconds", .number(finished.seconds)), ("speed", .integer(Int64(finished.bytesPerSecond))),
                ("bytesFetched", .integer(finished.bytesFetched)), ("digests", .digests(finished.digests)),
                (
                    "verified",
                    .array(finished.verifiedChecksums.map { .string($0.description) })
                ),
                ("connections", .integer(Int64(finished.connections))),
                ("retries", .integer(Int64(finished.retries))),
                ("resumedBytes", .integer(finished.resumedBytes)),
                ("alreadyPresent", .bool(finished.alreadyPresent)),
            ]
                // Recorded when the file was saved, not computed now: never in `digests`.
                + (finished.recordedDigests.isEmpty
                    ? [] : [("recordedDigests", .digests(finished.recordedDigests))])
                + (finished.sources.isEmpty
                    ? []
                    : [
                        (
                            "sources",
                            .array(
                                finished.sources.map { source in
                                    .object(
                                        [
                                            ("url", .string(source.url.redactedForDisplay)),
                                            ("bytes", .integer(source.bytes)),
                                        ]
                                            + (source.dropped.map { [("dropped", .string($0))] } ?? []))
                                })
                        )
                    ])
        case .sourceDropped(let url, let reason):
            return [("source", .string(url.redactedForDisplay)), ("reason", .string(reason))]
        case .pieceFailed(let offset, let length, let sources):
            return [
                ("offset", .integer(offset)), ("length", .integer(length)),
                ("sources", .array(sources.map { .string($0.redactedForDisplay) })),
            ]
        case .failed(let error):
            // What a script branches on without reading the message: the HTTP status of the answer
            // that failed, and the URL that answered (a redirect's end, a mirror), redacted.
            return [
                ("code", .integer(Int64(error.code.rawValue))),
                ("error", .string(ExitCodeTable.name(error.code))),
                ("message", .string(error.commandLineMessage)),
                ("httpStatus", JSONValue(error.httpStatus.map(Int64.init))),
                ("failedURL", error.url.map { .string($0.redactedForDisplay) } ?? .null),
            ]
        case .exchange(let exchange):
            return [
                ("request", .array(exchange.request.map { .string($0) })),
                ("response", .array(exchange.response.map { .string($0) })),
            ]
        }
    }

    private static func probeFields(_ probe: Event.Probe) -> [(String, JSONValue)] {
        [
            ("finalURL", .string(probe.finalURL.absoluteString)), ("size", JSONValue(probe.size)),
            ("ranges", .bool(probe.acceptsRanges)), ("etag", JSONValue(probe.etag)),
            ("lastModified", JSONValue(probe.lastModified)),
            ("contentDisposition", JSONValue(probe.contentDisposition)),
            (
                "digests",
                .array(
                    probe.offeredDigests.map {
                        .object([
                            ("algorithm", .string($0.checksum.algorithm)),
                            ("value", .string($0.checksum.hexValue)), ("header", .string($0.header)),
                        ])
                    })
            ),
            (
                "ignoredDigests",
                .array(
                    probe.ignoredDigests.map {
                        .object([("header", .string($0.header)), ("reason", .string($0.reason))])
                    })
            ),
        ]
    }

    /// The last line of a run: how many files, how many succeeded and failed, the exit code, the
    /// seconds the run took, and whether it was a dry run.
    package static func summary(
        files: Int, succeeded: Int, failed: Int, exitCode: Int32, elapsed: Double, dryRun: Bool = false
    ) -> String {
        JSONValue.object([
            ("event", .string("summary")), ("files", .integer(Int64(files))),
            ("succeeded", .integer(Int64(succeeded))), ("failed", .integer(Int64(failed))),
            ("exitCode", .integer(Int64(exitCode))), ("elapsed", .number(elapsed)), ("dryRun", .bool(dryRun)),
        ]).text
    }
}
