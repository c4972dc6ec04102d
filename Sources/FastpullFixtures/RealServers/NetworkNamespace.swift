import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A network namespace of the test's own (`ip netns add`), whose loopback link the kernel shapes:
/// `tbf` for one cap shared by every connection, `htb` with `u32` filters for a rate per connection.
/// Kernel shaping cannot be dodged by request boundaries the way nginx's `limit_rate` can, so this is
/// the honest throttled link. Servers and clients run inside it through ``command(_:_:)``
/// (`ip netns exec`, which execs the program: its process id is the program's).
///
/// Needs root and iproute2; ``unavailableReason`` says why not. ``remove()`` deletes the namespace,
/// which ends its links (the programs inside should be stopped first).
public final class NetworkNamespace: Sendable {
    /// The namespace's name under `/run/netns`.
    public let name: String

    private static let counter = Atomic<Int>(0)
    private static let ip = executable("ip")
    private static let tc = executable("tc")

    /// iproute2's `name` in the usual folders, or nil.
    private static func executable(_ name: String) -> String? {
        ["/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"].map { $0 + name }.first { access($0, X_OK) == 0 }
    }

    /// setns(2), which Swift's Glibc module does not declare (it needs _GNU_SOURCE); looked up in libc.
    private static let setNamespace: (@convention(c) (Int32, Int32) -> Int32)? = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "setns") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
    }()
    /// CLONE_NEWNET: join a network namespace.
    private static let newNetworkNamespace: Int32 = 0x4000_0000

    /// Why namespaces cannot be made here, or nil when they can.
    public static var unavailableReason: String? {
        if geteuid() != 0 { return "network namespaces need root" }
        if ip == nil { return "ip (iproute2) is not installed" }
        if tc == nil { return "tc (iproute2) is not installed" }
        if setNamespace == nil { return "setns(2) is not available" }
        return nil
    }

    private init(name: String) {
        self.name = name
    }

    /// Creates a namespace whose loopback is up with an MTU of `mtu` (1500 by default, as on a real
    /// link: loopback's 64 KiB frames would make a shaped link burst far past its rate).
    public static func create(mtu: Int = 1500) async throws -> NetworkNamespace {
        if let reason = unavailableReason { throw RealServerError(reason) }
        let serial = counter.add(1, ordering: .relaxed).newValue
        let namespace = NetworkNamespace(name: "fastpull-\(getpid())-\(serial)")
        try await run(ip!, ["netns", "add", namespace.name])
        do {
            try await run(ip!, ["-n", namespace.name, "link", "set", "lo", "mtu", String(mtu), "up"])
        } catch {
            await namespace.remove()
            throw error
        }
        return namespace
    }

    /// Caps the whole loopback link at `rate` (a `tc` rate such as `32mbit`): every connection in the
    /// namespace shares it. `burst` is the token bucket's depth, `latency` the longest a packet queues.
    public func capLink(rate: String, burst: String = "32kb", latency: String = "20ms") async throws {
        try await Self.run(
            Self.tc!,
            [
                "-n", name, "qdisc", "replace", "dev", "lo", "root", "tbf", "rate", rate, "burst", burst,
                "latency", latency,
            ])
    }

    /// One server's share of ``capEachConnection(_:buckets:)``: the port it answers from, the rate
    /// of each of its connections (a `tc` rate such as `160mbit`), and the client-port buckets shaped
    /// to `slowRate` instead.
    public struct ConnectionCap: Sendable, Hashable {
        /// The server's port (the source port of what it sends).
        public var port: Int
        /// Each connection's rate.
        public var rate: String
        /// Client-port buckets (low byte) shaped to ``slowRate`` instead.
        public var slow: Set<Int>
        /// The rate of the connections in ``slow``.
        public var slowRate: String
        /// Whether ``rate`` is one link all of the server's connections share, instead of each
        /// connection's own.
        public var shared = false

        /// A cap of `rate` on every connection from `port`, `slowRate` on those in the `slow` buckets.
        public init(
            port: Int, rate: String, slow: Set<Int> = [], slowRate: String = "8mbit", shared: Bool = false
        ) {
            self.port = port
            self.rate = rate
            self.slow = slow
            self.slowRate = slowRate
            self.shared = shared
        }
    }

    /// Gives every connection from a server on `port` a rate of its own: client ports are spread over
    /// `buckets` classes by their low byte (`u32` on the destination port), each shaped to `rate`
    /// (`htb`), except the buckets in `slow`, shaped to `slowRate`. The namespace's clients take their
    /// ports from `buckets` ports in a row (``confinePorts(to:)``), so no two live connections share a
    /// bucket.
    public func capEachConnection(
        fromPort port: Int, rate: String, buckets: Int = 256, slow: Set<Int> = [], slowRate: String = "8mbit"
    ) async throws {
        try await capEachConnection(
            [ConnectionCap(port: port, rate: rate, slow: slow, slowRate: slowRate)], buckets: buckets)
    }

    /// Gives every connection from each of `servers` a rate of its own, as
    /// ``capEachConnection(fromPort:rate:buckets:slow:slowRate:)`` does for one: each server gets its
    /// own `buckets` classes, so a client port has one class per server (matched on the server's
    /// source port and the client port's low byte). Traffic to no listed port is not shaped. The
    /// classes and filters go to `tc` in one batch.
    public func capEachConnection(_ servers: [ConnectionCap], buckets: Int = 256) async throws {
        precondition(
            (1...256).contains(buckets) && servers.count * buckets < 0xffff,
            "at most 0xfffe classes: \(servers.count) servers × \(buckets) buckets")
        var commands = [
            "qdisc replace dev lo root handle 1: htb default ffff",
            "class add dev lo parent 1: classid 1:ffff htb rate 10gbit",
        ]
        for (index, server) in servers.enumerated() {
            if server.shared {
                // One class for all of the server's connections: a link they share.
                let classID = String(index * buckets + 1, radix: 16)
                commands.append(
                    "class add dev lo parent 1: classid 1:\(classID) htb rate \(server.rate) ceil \(server.rate)"
                )
                commands.append(
                    "filter add dev lo parent 1: protocol ip prio 1 u32 match ip sport \(server.port) 0xffff "
                        + "flowid 1:\(classID)")
                continue
            }
            for bucket in 0..<buckets {
                let classID = String(index * buckets + bucket + 1, radix: 16)
                let bucketRate = server.slow.contains(bucket) ? server.slowRate : server.rate
                commands.append(
                    "class add dev lo parent 1: classid 1:\(classID) htb rate \(bucketRate) ceil \(bucketRate)"
                )
                commands.append(
                    "filter add dev lo parent 1: protocol ip prio 1 u32 match ip sport \(server.port) 0xffff "
                        + "match ip dport \(bucket) 0x00ff flowid 1:\(classID)")
            }
        }
        try await Self.runBatch(Self.tc!, namespace: name, commands)
        try await confinePorts(to: buckets)
    }

    /// The first of the ports ``confinePorts(to:)`` leaves to clients: a multiple of 256, so that those
    /// ports' low bytes run from 0 up.
    public static let firstClientPort = 40_960

    /// Makes the namespace's clients take their ports from `count` ports in a row, starting at
    /// ``firstClientPort`` (`net.ipv4.ip_local_port_range`, which each namespace has of its own). The
    /// kernel otherwise picks a client port from some 28,000, spread out and mostly even: 64
    /// connections then fell into about 50 of the 128 even low bytes, and a dozen of them shared a
    /// bucket with another, two connections at one connection's rate, one of them starved.
    ///
    /// At most `count` connections are open at once, then, and a port its client closed is taken
    /// again only a second later (loopback reuses ports in `TIME_WAIT` after that): 256 ports hold a
    /// benchmark's back-to-back runs of 64 connections with room to spare.
    public func confinePorts(to count: Int) async throws {
        precondition(count >= 2, "a port range needs two ports at least")
        let last = Self.firstClientPort + count - 1
        try await Self.run(
            Self.ip!,
            [
                "netns", "exec", name, "sh", "-c",
                "echo \(Self.firstClientPort) \(last) > /proc/sys/net/ipv4/ip_local_port_range",
            ])
    }

    /// A link between this machine's own namespace and the test's: a veth pair, each end with an
    /// address of a /30 of its own.
    public struct HostLink: Sendable {
        /// The host's end, in the host's namespace.
        public var hostInterface: String
        /// The host end's address.
        public var hostAddress: String
        /// The namespace end's address: what the host reaches a server inside at.
        public var namespaceAddress: String
        /// The namespace's end, inside the namespace: its only way out (no default route).
        public var namespaceInterface: String
    }

    /// Links the namespace to the host with a veth pair (`10.213.N.1` on the host, `10.213.N.2`
    /// inside), both ends up. Deleting the namespace deletes the pair.
    public func linkToHost() async throws -> HostLink {
        let ip = Self.ip!
        let tag = String(UInt16.random(in: 0...0xFFFF), radix: 16)
        let subnet = Int.random(in: 0...63) * 4
        let inside = "fpn\(tag)"
        let link = HostLink(
            hostInterface: "fph\(tag)", hostAddress: "10.213.\(subnet / 4).1",
            namespaceAddress: "10.213.\(subnet / 4).2", namespaceInterface: inside)
        try await Self.run(ip, ["link", "add", link.hostInterface, "type", "veth", "peer", "name", inside])
        try await Self.run(ip, ["link", "set", inside, "netns", name])
        try await Self.run(ip, ["addr", "add", link.hostAddress + "/30", "dev", link.hostInterface])
        try await Self.run(ip, ["link", "set", link.hostInterface, "up"])
        try await Self.run(ip, ["-n", name, "addr", "add", link.namespaceAddress + "/30", "dev", inside])
        try await Self.run(ip, ["-n", name, "link", "set", inside, "up"])
        return link
    }

    /// What runs a command inside the namespace: `ip netns exec NAME`.
    public var commandPrefix: [String] { [Self.ip ?? "ip", "netns", "exec", name] }

    /// The command line that runs `executable arguments` inside the namespace.
    public func command(_ executable: String, _ arguments: [String]) -> (
        executable: String, arguments: [String]
    ) {
        (commandPrefix[0], Array(commandPrefix.dropFirst()) + [executable] + arguments)
    }

    /// True once something inside the namespace accepts TCP connections on 127.0.0.1:`port`. The
    /// connect runs on a thread of its own that joins the namespace (`setns` changes only the calling
    /// thread, which ends right after).
    public func accepts(_ port: Int) async -> Bool {
        let path = "/run/netns/" + name
        return await withCheckedContinuation { continuation in
            Thread {
                let descriptor = open(path, O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else { return continuation.resume(returning: false) }
                defer { close(descriptor) }
                guard let join = Self.setNamespace, join(descriptor, Self.newNetworkNamespace) == 0 else {
                    return continuation.resume(returning: false)
                }
                continuation.resume(returning: LoopbackPort.accepts(port))
            }.start()
        }
    }

    /// Deletes the namespace.
    public func remove() async {
        try? await Self.run(Self.ip ?? "ip", ["netns", "delete", name])
    }

    /// Runs `commands` (lines of `tc` without the program name) as one `tc -n NAME -batch FILE`: one
    /// process instead of one per line, stopping at the first line that fails.
    private static func runBatch(_ executable: String, namespace: String, _ commands: [String]) async throws {
        let folder = try ServerFolder.create("netns-batch")
        defer { ServerFolder.remove(folder) }
        let file = folder + "/commands"
        try (commands.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        try await run(executable, ["-n", namespace, "-batch", file])
    }

    /// Runs one iproute2 command to its end; an error quotes what it printed.
    private static func run(_ executable: String, _ arguments: [String]) async throws {
        let folder = try ServerFolder.create("netns")
        defer { ServerFolder.remove(folder) }
        let process = try ServerProcess(
            executable: executable, arguments: arguments, standardOutput: folder + "/out",
            standardError: folder + "/err")
        guard let exit = await process.exited(within: .seconds(10)) else {
            await process.stop()
            throw RealServerError("\(process.commandLine) did not finish within 10 s")
        }
        guard exit.code == 0 else {
            throw RealServerError(
                "\(process.commandLine) failed (\(exit))",
                serverOutput: ServerFolder.tail(of: folder + "/err"))
        }
    }
}
