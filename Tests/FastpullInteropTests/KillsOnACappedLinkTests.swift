import FastpullFixtures
import Foundation
import Testing

/// Twenty `kill -9` at moments from 0.1 to 3 s, then a run to the end, against nginx behind a link the
/// kernel caps at 100 Mbit/s (a network namespace of the test's own with `tbf`): the file is
/// byte-identical, and the live journal kept so much of every killed run that nginx sent at most
/// 1.10 × the file + 8 MiB in all (its access log counts every byte it handed the kernel, killed
/// connections included).
///
/// What a kill still costs is mostly not the client's: nginx counts as sent what sits in its
/// connections' socket buffers (half a megabyte to a megabyte each once grown, seen with `ss -tm`),
/// lost with the process. The client bounds it by what it asks: on this link it finds the limit
/// shared, keeps two connections and asks a tenth of a second of each one's speed at a time, and
/// the live journal is saved every 10 ms. Each resumed run starts where the one before was (the
/// journal remembers the count and the shared limit), instead of ramping from four connections with a
/// mebibyte each, which is what a kill in a run's first second used to throw away. Measured by hand
/// with the same kill moments: 1.032–1.039 × the file (1.056–1.089 × before the journal remembered the
/// link, 1.107–1.175 × before small windows). On a later machine the same kill moments gave
/// 1.037–1.093 × in eleven runs, as bimodal with the client of an earlier release as with this one
/// (about half the runs near 1.04, half near 1.07): the access log shows whole 1 MiB windows nginx
/// sent completely and the client asked for again after a kill, in runs that had started without
/// the remembered link. The bound, 1.05 × before, holds that spread until that is found.
///
/// One CI run gave 1.386 ×. On this link a step from 4 to 8 connections measured before the newcomers'
/// first bytes showed the 4 keeping all they had and no gain, read as a limit of each connection's
/// own (a second's worth of window each), and a resumed run compared its first probe with its own slow
/// start and ramped to 24 (a third of fresh runs by hand did one or the other). With both measured
/// again, 13 of 15 fresh runs find the limit shared and keep two. A failure prints every run's
/// connection counts from its trace.
@Suite(
    "Kills on a capped link",
    .enabled(if: NetworkNamespace.unavailableReason == nil, "needs root and iproute2")
)
struct KillsOnACappedLinkTests {
    @Test func twentyKillsThenARunToTheEndWasteLittle() async throws {
        let size = 512 * TestContent.mebibyte
        let namespace = try await NetworkNamespace.create()
        do {
            try await namespace.capLink(rate: "100mbit")
            try await killAndFinish(size: size, in: namespace)
        } catch {
            await namespace.remove()
            throw error
        }
        await namespace.remove()
    }

    func killAndFinish(size: Int, in namespace: NetworkNamespace) async throws {
        try await InteropFolder.with("kills") { folder in
            let root = folder + "/root"
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            let data = await TestContent.random(size, seed: TestContent.seed("kills on a capped link"))
            try data.write(to: URL(fileURLWithPath: root + "/big.bin"))
            let nginx = try await NginxServer.start(
                documentRoot: root, options: NginxServer.Options(namespace: namespace))
            do {
                let url = "http://127.0.0.1:\(nginx.port)/big.bin"
                let output = folder + "/big.bin"
                // The moments are drawn from a fixed seed, so a failure can be replayed.
                var random = SeededRandom(seed: 12)
                var moments: [Double] = []
                for _ in 0..<20 {
                    let moment = 0.1 + random.nextUnit() * 2.9
                    moments.append(moment)
                    let run = try FastpullProcess(
                        [url, "-o", output, "-q", "--trace", folder + "/run\(moments.count).trace"],
                        in: folder,
                        namespace: namespace)
                    try await Task.sleep(for: .seconds(moment))
                    #expect(!run.hasFinished, "the download ended before the kill at \(moment) s")
                    run.kill()
                    let killed = await run.finished()
                    #expect(killed.status == 9 || killed.status == 137, "a killed run: \(killed)")
                }
                let last = try await FastpullProcess.run(
                    [url, "-o", output, "-q"], in: folder, namespace: namespace)
                #expect(last.status == 0, "the run to the end: \(last)")
                #expect(await InteropFolder.compare(output, to: data) == .identical)
                let sent = await Self.bytesSent(by: nginx)
                let bound = Int64(Double(size) * 1.10) + 8 * Int64(TestContent.mebibyte)
                let ratio = Double(sent) / Double(size)
                print(
                    "kills on a capped link: nginx sent \(sent) bytes for a file of \(size) "
                        + "(\(String(format: "%.3f", ratio))× size; bound \(bound)) after kills at "
                        + moments.map { String(format: "%.2f", $0) }.joined(separator: ", ") + " s")
                #expect(
                    sent <= bound,
                    """
                    nginx sent \(sent) bytes, over \(bound); the connection counts of each killed run:\
                    \(Self.connectionCounts(inTracesIn: folder, runs: moments.count))
                    """)
                #expect(sent >= Int64(size), "nginx's log misses bytes: \(sent) of \(size)")
            } catch {
                await nginx.stop()
                throw error
            }
            await nginx.stop()
        }
    }

    /// Each run's connection counts and their reasons, from its trace ("4 start, 8 gain, 2 probe
    /// down"), one run per line: what a failure needs to be understood.
    static func connectionCounts(inTracesIn folder: String, runs: Int) -> String {
        (1...runs).map { run in
            let path = folder + "/run\(run).trace"
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            let counts = text.split(separator: "\n").compactMap { line -> String? in
                guard let data = line.data(using: .utf8),
                    let event = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                    event["event"] as? String == "connections", let count = event["count"] as? Int
                else { return nil }
                return "\(count) \(event["reason"] as? String ?? "")"
            }
            return "\nrun \(run): " + counts.joined(separator: ", ")
        }.joined()
    }

    /// The body bytes of every GET in nginx's log, read once the log stops growing: a killed
    /// connection's entry is written when nginx notices the reset, just after the client died.
    static func bytesSent(by nginx: NginxServer) async -> Int64 {
        var previous = -1
        var entries: [AccessLogEntry] = []
        for _ in 0..<50 {
            entries = await nginx.accessLog.entries()
            if entries.count == previous { break }
            previous = entries.count
            try? await Task.sleep(for: .milliseconds(100))
        }
        return entries.filter { $0.method == "GET" }.compactMap(\.bytesSent).reduce(0, +)
    }
}

/// A small deterministic generator (SplitMix64), for test moments that replay.
struct SeededRandom {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    /// The next number in [0, 1).
    mutating func nextUnit() -> Double {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Double(z >> 11) / Double(1 << 53)
    }
}
