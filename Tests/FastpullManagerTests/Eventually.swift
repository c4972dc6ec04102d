import Foundation

/// Waits until `condition` holds, at most `seconds` (polling every 10 ms): for a state a transfer or
/// the daemon reaches on threads of its own.
func waitFor(_ seconds: Double = 20, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while try await !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try await Task.sleep(for: .milliseconds(10))
    }
    return true
}
