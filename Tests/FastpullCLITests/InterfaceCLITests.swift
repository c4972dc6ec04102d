import FastpullFixtures
import Foundation
import Synchronization
import Testing

/// `--interface` (curl's; wget's `--bind-address`): every connection comes from that address, or
/// from the named interface's; one that cannot be used fails at once, saying why.
@Suite("fastpull --interface")
struct InterfaceCLITests {
    /// A fixture server that records the address each request came from.
    struct Observed {
        /// The addresses, as the request log gives them.
        final class Peers: Sendable {
            let list = Mutex<[String]>([])
        }

        let server: FixtureServer
        let peers = Peers()

        init() throws {
            var configuration = FixtureServer.Configuration()
            let peers = peers
            configuration.requestLog = { line in
                let peer = line.prefix { $0 != " " }
                let address = String(peer[..<(peer.lastIndex(of: ":") ?? peer.endIndex)])
                peers.list.withLock { $0.append(address) }
            }
            server = try FixtureServer(configuration)
        }

        /// The addresses requests came from since the last call.
        func takePeers() -> Set<String> {
            Set(
                peers.list.withLock { list in
                    defer { list = [] }
                    return list
                })
        }
    }

    @Test func everyConnectionComesFromTheAddressOrInterfaceAskedFor() async throws {
        let observed = try Observed()
        let folder = try ScratchFolders.make("fastpull-interface").path
        let url = observed.server.url("/gen/\(1 << 20)?seed=91").absoluteString
        let content = Data(FixtureContent.bytes(count: 1 << 20, seed: 91))
        for (arguments, peer) in [
            (["--interface", "127.0.0.2"], "127.0.0.2"), (["--bind-address", "127.0.0.3"], "127.0.0.3"),
            (["--interface", "lo"], "127.0.0.1"),
        ] {
            let name = "\(peer).bin"
            let result = try await CLIRunner.run(
                [url, "-o", name, "-n", "4", "--min-segment", "128K"] + arguments, in: folder)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(FileManager.default.contents(atPath: folder + "/" + name) == content)
            #expect(observed.takePeers() == [peer], "\(arguments)")
        }
    }

    @Test func anAddressThatCannotBeUsedFailsAtOnceSayingWhy() async throws {
        let observed = try Observed()
        let folder = try ScratchFolders.make("fastpull-interface-bad").path
        let url = observed.server.url("/gen/1000").absoluteString
        let authority = "127.0.0.1:\(observed.server.port)"

        let foreign = try await CLIRunner.run([url, "-o", "x", "--interface", "192.0.2.1"], in: folder)
        #expect(foreign.status == 3, "\(foreign.stderr)")
        #expect(
            foreign.stderr.contains(
                "cannot connect from 192.0.2.1 to \(authority): Cannot assign requested address"),
            "\(foreign.stderr)")
        #expect(!foreign.stderr.contains("retry"), "\(foreign.stderr)")

        let family = try await CLIRunner.run([url, "-o", "x", "--interface", "::1"], in: folder)
        #expect(family.status == 3, "\(family.stderr)")
        #expect(
            family.stderr.contains("cannot connect from ::1 to \(authority): it has no IPv4 address"),
            "\(family.stderr)")
        #expect(observed.takePeers().isEmpty)

        let unknown = try await CLIRunner.run([url, "--interface", "nosuchif0"], in: folder)
        #expect(unknown.status == 2)
        #expect(
            unknown.stderr.contains(
                "error: --interface: expected an IP address or a network interface, got 'nosuchif0'"),
            "\(unknown.stderr)")
    }
}
