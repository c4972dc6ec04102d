import Foundation
import Glibc
import Synchronization
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullNet

@Suite("NetTests")
struct NetTests {
    @Test("connect and exchange bytes", arguments: ["127.0.0.1", "::1", "localhost"])
    func connectAndExchange(host: String) async throws {
        let server = try NetTestKit.Server(host: host == "localhost" ? "127.0.0.1" : host) { connection in
            let request = connection.receive(count: 5)
            connection.send(Array("got:".utf8) + request)
        }
        defer { server.stop() }
        let received = try await NetTestKit.blocking {
            let transport = try Connector.connect(
                host: host, port: server.port, tls: nil, timeouts: Timeouts())
            defer { transport.close() }
            try Array("hello".utf8).withUnsafeBytes { try transport.write($0) }
            return try NetTestKit.readToEnd(transport)
        }
        #expect(String(decoding: received, as: UTF8.self) == "got:hello")
    }

    @Test func resolverReturnsIPv4AndIPv6Literals() throws {
        let v4 = try Resolver.resolve(host: "127.0.0.1", port: 80)
        #expect(v4.map(\.family) == [AF_INET])
        #expect(v4.map(\.numericHost) == ["127.0.0.1"])
        let v6 = try Resolver.resolve(host: "::1", port: 80)
        #expect(v6.map(\.family) == [AF_INET6])
        #expect(v6.map(\.numericHost) == ["::1"])
        #expect(Resolver.isIPLiteral("::1") && Resolver.isIPLiteral("10.0.0.1"))
        #expect(!Resolver.isIPLiteral("localhost") && !Resolver.isIPLiteral("[::1]"))
    }

    @Test func timeoutConversionsRoundUpAndClamp() {
        #expect(Timeouts.milliseconds(.zero) == 0)
        #expect(Timeouts.milliseconds(.seconds(-3)) == 0)
        #expect(Timeouts.milliseconds(.nanoseconds(1)) == 1)
        #expect(Timeouts.milliseconds(.milliseconds(1500)) == 1500)
        #expect(Timeouts.milliseconds(.seconds(Int64.max)) == Int32.max)
        let tiny = Timeouts.timeval(.zero)
        #expect(tiny.tv_sec == 0 && tiny.tv_usec == 1)
        let mixed = Timeouts.timeval(.milliseconds(2500))
        #expect(mixed.tv_sec == 2 && mixed.tv_usec == 500_000)
        let almost = Timeouts.timeval(.seconds(1) + .nanoseconds(999_999_999))
        #expect(almost.tv_sec == 2 && almost.tv_usec == 0)
    }

    @Test func errorDescriptionsAreSentences() {
        #expect(
            NetError.connect(host: "::1", port: 8080, message: "Network is unreachable").description
                == "could not connect to [::1]:8080: Network is unreachable")
        #expect(NetError.timeout("TLS handshake").description == "TLS handshake timed out")
        #expect(
            NetError.system(call: "socket", errno: EMFILE).description == "socket failed: Too many open files"
        )
        #expect(NetError.cancelled.description == "the connection was cancelled")
    }

    @Test func connectionRefused() async throws {
        let closed = try NetTestKit.UnlistenedPort(host: "127.0.0.1")
        defer { closed.close() }
        let error = await #expect(throws: NetError.self) {
            try await NetTestKit.blocking {
                _ = try Connector.connect(
                    host: "127.0.0.1", port: closed.port, tls: nil, timeouts: Timeouts())
            }
        }
        #expect(error == .connect(host: "127.0.0.1", port: closed.port, message: "Connection refused"))
        #expect(error?.description == "connection refused by 127.0.0.1:\(closed.port)")
    }

    @Test func connectorFallsBackToTheNextAddressAndReportsTheLastFailure() async throws {
        let refusingV6 = try NetTestKit.UnlistenedPort(host: "::1")
        let refusingV4 = try NetTestKit.UnlistenedPort(host: "127.0.0.1")
        defer {
            refusingV6.close()
            refusingV4.close()
        }
        let server = try NetTestKit.Server(host: "127.0.0.1") { connection in
            connection.send(Array("ok".utf8))
        }
        defer { server.stop() }
        let refused6 = try Resolver.resolve(host: "::1", port: refusingV6.port)
        let refused4 = try Resolver.resolve(host: "127.0.0.1", port: refusingV4.port)
        let good = try Resolver.resolve(host: "127.0.0.1", port: server.port)

        let received = try await NetTestKit.blocking {
            let socket = try Connector.connectSocket(
                to: refused6 + good, host: "example.test", port: 1, timeout: .seconds(10))
            defer { socket.close() }
            return try NetTestKit.readToEnd(socket)
        }
        #expect(received == Array("ok".utf8))

        let error = await #expect(throws: NetError.self) {
            try await NetTestKit.blocking {
                _ = try Connector.connectSocket(
                    to: refused6 + refused4, host: "example.test", port: 1, timeout: .seconds(10))
            }
        }
        #expect(error == .connect(host: "example.test", port: 1, message: "Connection refused"))
    }

    @Test func unresolvableNameFailsWithResolveError() async throws {
        let error = await #expect(throws: NetError.self) {
            try await NetTestKit.blocking {
                _ = try Connector.connect(
                    host: "no-such-host.fastpull.invalid", port: 80, tls: nil, timeouts: Timeouts())
            }
        }
        guard case .resolve(let host, let message, let permanent)? = error else {
            Issue.record("expected a resolve error, got \(String(describing: error))")
            return
        }
        #expect(host == "no-such-host.fastpull.invalid")
        #expect(!message.isEmpty)
        // `.invalid` never resolves (RFC 6761): no use asking again.
        #expect(permanent)
        #expect(
            error?.description.hasPrefix("could not resolve host no-such-host.fastpull.invalid: ") == true)
    }

    @Test func readTimesOutWhenTheServerSendsNothing() async throws {
        let server = try NetTestKit.Server(host: "127.0.0.1") { _ in }
        defer { server.stop() }
        let error = await #expect(throws: NetError.self) {
            try await NetTestKit.blocking {
                let transport = try Connector.connect(
                    host: "127.0.0.1", port: server.port, tls: nil,
                    timeouts: Timeouts(connect: .seconds(10), idle: .milliseconds(200)))
                defer { transport.close() }
                _ = try NetTestKit.readToEnd(transport)
            }
        }
        #expect(error == .timeout("read"))
        #expect(error?.description == "read timed out")
    }

    @Test func shutdownFromAnotherThreadUnblocksABlockedRead() async throws {
        let server = try NetTestKit.Server(host: "127.0.0.1") { _ in }
        defer { server.stop() }
        let transport = try await NetTestKit.blocking {
            try Connector.connect(host: "127.0.0.1", port: server.port, tls: nil, timeouts: Timeouts())
        }
        defer { transport.close() }
        try await NetTestKit.expectShutdownUnblocksRead(transport)
    }

    @Test func readAfterShutdownOrCloseThrowsCancelledAndCloseIsIdempotent() async throws {
        let server = try NetTestKit.Server(host: "127.0.0.1") { connection in
            connection.send([1, 2, 3], halfClose: false)
        }
        defer { server.stop() }
        try await NetTestKit.blocking {
            let first = try Connector.connect(
                host: "127.0.0.1", port: server.port, tls: nil, timeouts: Timeouts())
            first.shutdown()
            first.shutdown()
            #expect(throws: NetError.cancelled) { _ = try NetTestKit.readToEnd(first) }
            #expect(throws: NetError.cancelled) { try [0].withUnsafeBytes { try first.write($0) } }
            first.close()
            first.close()
            first.shutdown()

            let second = try Connector.connect(
                host: "127.0.0.1", port: server.port, tls: nil, timeouts: Timeouts())
            second.close()
            #expect(throws: NetError.cancelled) { _ = try NetTestKit.readToEnd(second) }
            second.close()
        }
    }

    @Test func aLargeReadReturnsWhatIsAvailableWithoutWaitingForMore() async throws {
        // The server sends 100 bytes and then holds the connection open; a read into a 1 MiB buffer must
        // return the available bytes (one recv) instead of waiting to fill the buffer.
        let server = try NetTestKit.Server(host: "127.0.0.1") { connection in
            connection.send([UInt8](repeating: 7, count: 100), halfClose: false)
        }
        defer { server.stop() }
        let total = try await NetTestKit.blocking {
            let transport = try Connector.connect(
                host: "127.0.0.1", port: server.port, tls: nil,
                timeouts: Timeouts(connect: .seconds(10), idle: .seconds(20)))
            defer { transport.close() }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
            defer { buffer.deallocate() }
            var total = 0
            while total < 100 {
                let count = try transport.read(into: buffer)
                #expect(count > 0)
                total += count
            }
            return total
        }
        #expect(total == 100)
    }

    @Test func peerResetIsReportedAsReset() async throws {
        let server = try NetTestKit.Server(host: "127.0.0.1") { connection in
            _ = connection.receive(count: 1)
            connection.reset()
        }
        defer { server.stop() }
        let error = await #expect(throws: NetError.self) {
            try await NetTestKit.blocking {
                let transport = try Connector.connect(
                    host: "127.0.0.1", port: server.port, tls: nil, timeouts: Timeouts())
                defer { transport.close() }
                // Keep writing until the reset arrives: MSG_NOSIGNAL means no SIGPIPE kills the process.
                let chunk = [UInt8](repeating: 0, count: 64 * 1024)
                for _ in 0..<10_000 {
                    try chunk.withUnsafeBytes { try transport.write($0) }
                }
            }
        }
        guard case .reset(let sentence)? = error else {
            Issue.record("expected .reset, got \(String(describing: error))")
            return
        }
        #expect(sentence.contains("127.0.0.1:\(server.port)"))
    }

    @Test func threadExecutorRunsBlockingTasksConcurrently() async throws {
        // Each task blocks in read(2) on its own pipe. The pipes are written only once all tasks are
        // inside their read at the same time, which the two-thread cooperative pool could never manage.
        let count = 8
        var pipes: [(read: Int32, write: Int32)] = []
        for _ in 0..<count {
            var ends: [Int32] = [0, 0]
            try #require(pipe(&ends) == 0)
            pipes.append((ends[0], ends[1]))
        }
        let executors = (0..<count).map { ThreadExecutor(name: "blocking-\($0)") }
        let entered = DispatchSemaphore(value: 0)
        let inside = NetTestKit.AtomicCell(0)
        let maximumInside = NetTestKit.AtomicCell(0)
        let allEntered = NetTestKit.AtomicCell(false)
        let writers = pipes.map(\.write)
        let releaser = Thread {
            // A deadline only so a broken executor fails the test instead of hanging it.
            let deadline = DispatchTime.now() + 30
            var reached = true
            for _ in 0..<count where entered.wait(timeout: deadline) == .timedOut { reached = false }
            allEntered.value.store(
                reached && inside.value.load(ordering: .sequentiallyConsistent) == count,
                ordering: .sequentiallyConsistent)
            for fd in writers { _ = Glibc.write(fd, "x", 1) }
        }
        releaser.start()

        let threadNames = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
            for (index, executor) in executors.enumerated() {
                let fd = pipes[index].read
                group.addTask(executorPreference: executor) {
                    let now = inside.value.add(1, ordering: .sequentiallyConsistent).newValue
                    maximumInside.value.max(now, ordering: .sequentiallyConsistent)
                    entered.signal()
                    var byte: UInt8 = 0
                    let result = Glibc.read(fd, &byte, 1)
                    inside.value.subtract(1, ordering: .sequentiallyConsistent)
                    #expect(result == 1)
                    return (index, NetTestKit.currentThreadName())
                }
            }
            var names: [Int: String?] = [:]
            for try await (index, name) in group { names[index] = name }
            return names
        }
        let reachedAll = allEntered.value.load(ordering: .sequentiallyConsistent)
        let maximum = maximumInside.value.load(ordering: .sequentiallyConsistent)
        #expect(reachedAll)
        #expect(maximum == count)
        for index in 0..<count { #expect(threadNames[index] == "blocking-\(index)") }
        for executor in executors {
            executor.shutdown()
            executor.waitUntilFinished()
        }
        for (readEnd, writeEnd) in pipes {
            Glibc.close(readEnd)
            Glibc.close(writeEnd)
        }
    }

    @Test func threadExecutorDrainsItsQueueBeforeExitingAndThenForwardsJobs() async throws {
        let executor = ThreadExecutor(name: "drain")
        let ran = NetTestKit.AtomicCell(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask(executorPreference: executor) {
                    ran.value.add(1, ordering: .sequentiallyConsistent)
                }
            }
            executor.shutdown()
            for try await _ in group {}
        }
        let ranCount = ran.value.load(ordering: .sequentiallyConsistent)
        #expect(ranCount == 50)
        executor.waitUntilFinished()
        // A job that arrives after the thread ended still runs (on the global executor), never hangs.
        let late = await Task(executorPreference: executor) { 42 }.value
        #expect(late == 42)
    }
}

// MARK: - Helpers shared with TLSTests

/// Loopback test helpers for the Net layer (a namespace, to keep the test target's global scope clean).
enum NetTestKit {
    /// Runs the blocking `body` on a fresh ``ThreadExecutor``, never on the cooperative pool.
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let executor = ThreadExecutor(name: "net-test")
        defer { executor.shutdown() }
        return try await withTaskExecutorPreference(executor) { try body() }
    }

    /// Reads until end of stream (at most 1 MiB).
    static func readToEnd(_ transport: any Transport) throws -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while result.count < 1 << 20 {
            let count = try buffer.withUnsafeMutableBytes { try transport.read(into: $0) }
            if count == 0 { break }
            result += buffer[..<count]
        }
        return result
    }

    /// Reads until `terminator` (inclusive) has arrived.
    static func readUntil(_ terminator: UInt8, from transport: any Transport) throws -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !result.contains(terminator) {
            let count = try buffer.withUnsafeMutableBytes { try transport.read(into: $0) }
            if count == 0 { break }
            result += buffer[..<count]
        }
        return result
    }

    /// Starts a read on its own thread, waits until that thread is asleep inside the read (its state in
    /// /proc is "S"), shuts the transport down from this thread, and expects the read to end with
    /// `.cancelled` (or end of stream).
    static func expectShutdownUnblocksRead(_ transport: any Transport) async throws {
        let threadID = AtomicCell<Int32>(0)
        let executor = ThreadExecutor(name: "reader")
        defer { executor.shutdown() }
        let reader = Task(executorPreference: executor) { () -> Result<Int, any Error> in
            threadID.value.store(NetTestKit.currentThreadID(), ordering: .sequentiallyConsistent)
            var buffer = [UInt8](repeating: 0, count: 1024)
            return Result { try buffer.withUnsafeMutableBytes { try transport.read(into: $0) } }
        }
        var asleep = false
        for _ in 0..<10_000 {
            let id = threadID.value.load(ordering: .sequentiallyConsistent)
            if id != 0, threadState(id) == "S" {
                asleep = true
                break
            }
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(asleep, "the reader never blocked")
        transport.shutdown()
        switch await reader.value {
        case .success(let count):
            Issue.record("read returned \(count) bytes instead of throwing .cancelled")
        case .failure(let error):
            #expect(error as? NetError == .cancelled)
        }
    }

    /// An `Atomic` in a class, so escaping closures and threads can share it.
    final class AtomicCell<Value: AtomicRepresentable & Sendable>: Sendable {
        let value: Atomic<Value>
        init(_ initial: Value) { value = Atomic(initial) }
    }

    /// The kernel's name for the calling thread.
    static func currentThreadName() -> String? {
        (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The kernel thread id of the caller, from the /proc/thread-self link ("<pid>/task/<tid>").
    static func currentThreadID() -> Int32 {
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
        return target.split(separator: "/").last.flatMap { Int32($0) } ?? 0
    }

    /// The scheduler state letter of thread `id` of this process ("R", "S", ...), from /proc.
    static func threadState(_ id: Int32) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/self/task/\(id)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ").first.map(String.init)
    }

    /// A port on `host` that refuses connections: bound (so nobody else takes it) but not listening.
    struct UnlistenedPort {
        let fd: Int32
        let port: Int

        init(host: String) throws {
            (fd, port) = try bindSocket(host: host)
        }

        func close() { Glibc.close(fd) }
    }

    /// A socket bound to `host` on a free port.
    static func bindSocket(host: String) throws -> (fd: Int32, port: Int) {
        let address = try #require(try Resolver.resolve(host: host, port: 0).first)
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = address.withSockAddr { Glibc.bind(fd, $0, $1) }
        try #require(bound == 0, "bind: \(String(cString: strerror(errno)))")
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let port =
            address.family == AF_INET
            ? withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in.self).sin_port }
            : withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in6.self).sin6_port }
        return (fd, Int(UInt16(bigEndian: port)))
    }

    /// A minimal loopback TCP server for tests: accepts connections on its own thread and runs `handler`
    /// for each on a thread of its own. After the handler returns, the connection stays open until the
    /// client closes it or `stop()` is called (so a handler that does nothing is a server that "accepts
    /// and sends nothing").
    ///
    /// A connection's descriptor is closed once the server is stopped *and* its handler has returned
    /// (or by `reset()`), always under the lock that lists it: a handler still running after `stop()`
    /// never reads, writes or closes a number that another socket (another test's, or a child
    /// process's pipe) has been given meanwhile.
    final class Server: Sendable {
        let port: Int
        private let listener: Int32
        private let shared = Shared()

        fileprivate final class Shared: Sendable {
            /// Open connections, and whether each one's handler has returned.
            let connections = Mutex<[Int32: Bool]>([:])
            let stopped = Atomic<Bool>(false)
            /// Whether the accept thread has closed the listener (it alone does, as it ends).
            let listenerClosed = Mutex(false)

            /// The handler of `fd` returned: its connection closes now if the server has stopped.
            func handlerReturned(_ fd: Int32) {
                connections.withLock { list in
                    guard list[fd] != nil else { return }
                    if stopped.load(ordering: .sequentiallyConsistent) {
                        list[fd] = nil
                        Glibc.close(fd)
                    } else {
                        list[fd] = true
                    }
                }
            }
        }

        /// One accepted connection, as handed to the handler.
        struct Connection: Sendable {
            let fd: Int32
            fileprivate let shared: Shared

            /// Closes the connection with an RST (linger 0) instead of a FIN.
            func reset() {
                shared.connections.withLock { list in
                    guard list.removeValue(forKey: fd) != nil else { return }
                    var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                    setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                    Glibc.close(fd)
                }
            }

            /// Receives exactly `count` bytes (fewer at end of stream).
            func receive(count: Int) -> [UInt8] {
                var bytes = [UInt8](repeating: 0, count: count)
                var filled = 0
                while filled < count {
                    let result = bytes.withUnsafeMutableBytes {
                        recv(fd, $0.baseAddress! + filled, count - filled, 0)
                    }
                    if result <= 0 { break }
                    filled += result
                }
                return Array(bytes[..<filled])
            }

            /// Sends all of `bytes`; with `halfClose` (the default) then shuts down the sending side, so the
            /// client sees end of stream while the connection stays open for reading.
            func send(_ bytes: [UInt8], halfClose: Bool = true) {
                var sent = 0
                while sent < bytes.count {
                    let result = bytes.withUnsafeBytes {
                        Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
                    }
                    if result <= 0 { return }
                    sent += result
                }
                if halfClose { Glibc.shutdown(fd, Int32(SHUT_WR)) }
            }
        }

        init(host: String, handler: @escaping @Sendable (Connection) -> Void) throws {
            (listener, port) = try NetTestKit.bindSocket(host: host)
            try #require(listen(listener, 64) == 0)
            let listener = self.listener
            let shared = self.shared
            Thread {
                // The listener closes here, as the thread ends, and stop() shuts it down only while it
                // is open: neither ever touches a number another socket has been given.
                defer {
                    shared.listenerClosed.withLock { closed in
                        Glibc.close(listener)
                        closed = true
                    }
                }
                while true {
                    let fd = accept(listener, nil, nil)
                    if fd < 0 {
                        if errno == EINTR || errno == ECONNABORTED { continue }
                        return
                    }
                    let accepted = shared.connections.withLock { list -> Bool in
                        guard !shared.stopped.load(ordering: .sequentiallyConsistent) else { return false }
                        list[fd] = false
                        return true
                    }
                    guard accepted else {
                        Glibc.close(fd)
                        return
                    }
                    let connection = Connection(fd: fd, shared: shared)
                    Thread {
                        handler(connection)
                        shared.handlerReturned(fd)
                    }.start()
                }
            }.start()
        }

        /// Stops accepting and shuts down every connection; each closes once its handler has returned.
        func stop() {
            shared.connections.withLock { list in
                shared.stopped.store(true, ordering: .sequentiallyConsistent)
                for (fd, handlerReturned) in list {
                    Glibc.shutdown(fd, Int32(SHUT_RDWR))
                    if handlerReturned {
                        list[fd] = nil
                        Glibc.close(fd)
                    }
                }
            }
            shared.listenerClosed.withLock { closed in
                if !closed { Glibc.shutdown(listener, Int32(SHUT_RDWR)) }
            }
        }

        deinit { stop() }

    }
}
