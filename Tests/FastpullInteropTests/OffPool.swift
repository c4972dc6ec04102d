import Foundation

/// Runs blocking or CPU-heavy work on a thread of its own, so it never holds one of the two threads of
/// Swift's cooperative pool that every test shares.
enum OffPool {
    /// The result of `work`, run on a new thread.
    static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: work()) }.start()
        }
    }

    /// The result of throwing `work`, run on a new thread.
    static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await run { Result { try work() } }.get()
    }
}
