import FastpullFixtures
import Foundation
import Synchronization

/// How the kernel shapes a scenario's link: the honest throttle, which request boundaries cannot dodge
/// the way they dodge nginx's `limit_rate` (MB = 10^6 bytes).
enum Shaping: Sendable {
    /// Every connection at most this many bytes per second (`htb`, one class per client-port bucket).
    case perConnection(Int)
    /// One connection in `slowEvery` (by client-port bucket) at `slow` bytes per second, the others at
    /// `fast`.
    case stragglers(slowEvery: Int, slow: Int, fast: Int)
    /// One cap shared by every connection (`tbf`).
    case sharedCap(Int)

    /// A short description for the report.
    var summary: String {
        switch self {
        case .perConnection(let rate): "kernel-shaped \(Self.megabytes(rate)) per connection"
        case .stragglers(let every, let slow, let fast):
            "kernel-shaped \(Self.megabytes(fast)) per connection, 1 in \(every) at \(Self.megabytes(slow))"
        case .sharedCap(let rate): "kernel-shaped link of \(Self.megabytes(rate)) shared by all connections"
        }
    }

    private static func megabytes(_ bytesPerSecond: Int) -> String {
        let value = Double(bytesPerSecond) / 1e6
        return value == value.rounded() ? "\(Int(value)) MB/s" : "\(value) MB/s"
    }

    /// A `tc` rate for `bytesPerSecond`.
    static func tcRate(_ bytesPerSecond: Int) -> String { "\(bytesPerSecond * 8)bit" }
}

/// A network namespace of its own for one scenario: nginx and every tool run inside it
/// (`ip netns exec`), and the kernel shapes its loopback as the scenario says. Needs root.
final class ShapedLink {
    let namespace: NetworkNamespace

    /// Creates the namespace (nothing shaped yet).
    init() throws {
        namespace = try blocking { try await NetworkNamespace.create() }
    }

    /// Shapes the link; per-connection rules apply to the answers of the server on `serverPort`.
    func shape(_ shaping: Shaping, serverPort: Int) throws {
        let namespace = namespace
        try blocking {
            switch shaping {
            case .perConnection(let rate):
                try await namespace.capEachConnection(fromPort: serverPort, rate: Shaping.tcRate(rate))
            case .stragglers(let every, let slow, let fast):
                try await namespace.capEachConnection(
                    fromPort: serverPort, rate: Shaping.tcRate(fast),
                    slow: Set((0..<256).filter { $0 % every == 0 }), slowRate: Shaping.tcRate(slow))
            case .sharedCap(let rate):
                try await namespace.capLink(rate: Shaping.tcRate(rate), burst: "64kb")
            }
        }
    }

    /// Shapes every connection from each server port to that server's rate (bytes per second), or, for
    /// a `shared` one, all of its connections together: the mirror scenarios, one rate per mirror.
    func shapeEachConnection(_ rates: [(port: Int, rate: Int, shared: Bool)]) throws {
        let namespace = namespace
        let caps = rates.map {
            NetworkNamespace.ConnectionCap(port: $0.port, rate: Shaping.tcRate($0.rate), shared: $0.shared)
        }
        try blocking { try await namespace.capEachConnection(caps) }
    }

    /// `invocation`, run inside the namespace.
    func inside(_ invocation: Invocation) -> Invocation {
        var wrapped = invocation
        (wrapped.executable, wrapped.arguments) = namespace.command(
            invocation.executable, invocation.arguments)
        return wrapped
    }

    /// Deletes the namespace.
    func remove() {
        let namespace = namespace
        try? blocking { await namespace.remove() }
    }
}

/// Runs `body` to its end from synchronous code (the harness's main thread), on Swift's pool.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do {
            let value = try await body()
            result.withLock { $0 = .success(value) }
        } catch {
            result.withLock { $0 = .failure(error) }
        }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}
