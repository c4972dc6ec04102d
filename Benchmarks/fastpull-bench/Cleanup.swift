import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What to undo if the harness is stopped by a signal: running children and scratch folders (the
/// sources alone are over a GiB of tmpfs).
enum Cleanup {
    private struct State {
        var children: Set<pid_t> = []
        var folders: [String] = []
    }

    private static let state = Mutex(State())

    static func register(child: pid_t) { state.withLock { _ = $0.children.insert(child) } }
    static func unregister(child: pid_t) { state.withLock { _ = $0.children.remove(child) } }
    static func register(folder: String) { state.withLock { $0.folders.append(folder) } }

    /// On SIGINT or SIGTERM: terminate the children, remove the folders, exit 130.
    @MainActor static func installSignalHandlers() {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stopEverything() }
            source.resume()
            signalSources.append(source)
        }
    }

    private static func stopEverything() -> Never {
        FileHandle.standardError.write(Data("fastpull-bench: interrupted; cleaning up\n".utf8))
        let (children, folders) = state.withLock { ($0.children, $0.folders) }
        for child in children { kill(-child, SIGTERM) }  // each child leads its own process group
        usleep(300_000)
        for folder in folders { try? FileManager.default.removeItem(atPath: folder) }
        exit(130)
    }

    /// Signal sources must stay alive; they are created once, on the main thread, before any other.
    @MainActor private static var signalSources: [any DispatchSourceSignal] = []
}
