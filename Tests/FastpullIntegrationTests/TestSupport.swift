import FastpullFixtures
import Foundation

@testable import Fastpull
@testable import FastpullEngine

#if canImport(Glibc)
    import Glibc
#endif

/// A fresh temporary folder, removed when the value is deinitialised.
final class TemporaryFolder: Sendable {
    let path: String

    init() {
        path =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("fastpull-test-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func url(_ name: String) -> URL { URL(fileURLWithPath: path).appendingPathComponent(name) }

    /// The names of everything in the folder, sorted.
    var contents: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted() }
}

/// Expected digests of fixture content.
enum Expected {
    static func sha256(size: Int, seed: UInt64 = 1) -> String {
        let digest = Digest(.sha256)
        digest.update(FixtureContent.bytes(count: size, seed: seed))
        return Digest.hex(digest.finalize())
    }

    static func sha256(ofFile url: URL) throws -> String {
        let digest = Digest(.sha256)
        digest.update([UInt8](try Data(contentsOf: url)))
        return Digest.hex(digest.finalize())
    }
}

extension Configuration {
    /// Fast retries, so failure tests finish quickly.
    /// The process-wide per-host limit (a host and port: each test's own server) is raised so that
    /// it does not decide how many connections a test gets, even where several of its downloads
    /// share one server.
    static func quickRetries(_ retries: Int = 5, connections: Int = 8) -> Configuration {
        var configuration = Configuration(connections: .fixed(connections))
        configuration.retries.limit = retries
        configuration.retries.baseDelay = .milliseconds(5)
        configuration.connections.maximumPerHost = 1000
        return configuration
    }
}

/// Waits until `condition` holds, at most `seconds` (polling every 5 ms): for a state another thread
/// reaches (a server learning of a client's close, a download's progress passing a mark).
func eventually(_ seconds: Double = 10, _ condition: () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try await Task.sleep(for: .milliseconds(5))
    }
    return true
}

/// Runs `body` with `error` cast to FastpullError, failing otherwise.
func fastpullError(_ error: any Error) -> FastpullError? { error as? FastpullError }

/// A TCP socket listening on 127.0.0.1 on a free port, for the small servers tests write themselves.
enum LoopbackListener {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Returns the listening descriptor and its port.
    static func open(backlog: Int32 = 64) throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && listen(fd, backlog) == 0
                    && getsockname(fd, address, &length) == 0
            }
        }
        guard bound else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "bind/listen on 127.0.0.1: \(reason)")
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}

extension Download {
    /// Waits until at least `bytes` are written (or `limit` passes), polling every millisecond on a
    /// thread of its own, and runs `action` right there: a test that pauses, cancels or changes the
    /// file mid-download must act in time even when the cooperative pool is starved (a sanitizer, a
    /// loaded machine) while the download runs on threads of its own. Returns whether the bytes came.
    @discardableResult
    func whenWritten(
        atLeast bytes: Int64, within limit: Duration = .seconds(20),
        _ action: @escaping @Sendable () -> Void = {}
    ) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread {
                let deadline = ContinuousClock.now + limit
                while self.progress.bytesWritten < bytes, ContinuousClock.now < deadline {
                    usleep(1000)
                }
                let arrived = self.progress.bytesWritten >= bytes
                if arrived { action() }
                continuation.resume(returning: arrived)
            }.start()
        }
    }
}
