import FoundationEssentials
import Synchronization

/// What a run learned of its link, kept in the journal: how many connections the controller held, what
/// they carried together, and whether the limit was shared by them (a capped link, a busy server).
///
/// A run resumed soon after on the same boot (the same command again after a crash, a kill or an
/// interrupt) starts where the last one was: with that many connections, holding (it still probes for
/// more now and then, as after any ramp), and with windows sized for their speed from the first
/// request. Without it every resumed run ramped from four connections with windows of a mebibyte, and
/// what a kill threw away was the server's buffers for all of them: twenty kills on a capped link cost
/// the server 1.06–1.09 × the file. Knowledge older than ``lifetime``, or from another boot (another
/// network, maybe), is not used.
package struct LinkMemory: Codable, Equatable, Sendable {
    /// The connections the controller held.
    var connections: Int
    /// What they carried together, in bytes per second.
    var bytesPerSecond: Int64
    /// Whether more connections did not raise the throughput and took from the ones there before.
    var shared: Bool
    /// When it was learned, in seconds since 1970.
    var learnedAt: Int64

    /// How long knowledge of a link is trusted.
    static let lifetime: Int64 = 600

    /// The seconds since 1970 now, as ``learnedAt`` counts them.
    static var now: Int64 { Int64(Date().timeIntervalSince1970) }

    /// Whether it was learned at most ``lifetime`` ago (and not in the future).
    func isFresh(now: Int64 = LinkMemory.now) -> Bool {
        now >= learnedAt && now - learnedAt <= Self.lifetime
    }

    /// What one connection carried, in bytes per second.
    var bytesPerSecondPerConnection: Double {
        Double(bytesPerSecond) / Double(max(connections, 1))
    }

    /// Whether the numbers can be those of a run: a journal is sealed, so this guards against a bug.
    var isPlausible: Bool { connections >= 1 && connections <= 1024 && bytesPerSecond > 0 }
}

/// The latest ``LinkMemory`` of a download, written by its fetch loop as the controller learns and read
/// by the checkpointer at every save.
package final class LinkMemoryCell: Sendable {
    private let memory: Mutex<LinkMemory?>

    /// Starts with what the journal remembered (nil for a fresh download).
    init(_ memory: LinkMemory?) { self.memory = Mutex(memory) }

    var current: LinkMemory? { memory.withLock { $0 } }

    /// Records what the controller holds now; keeps what was known while it has nothing to tell (a
    /// run killed while it still ramps leaves the last run's knowledge in place).
    func learn(from controller: ConnectionController, now: Int64 = LinkMemory.now) {
        guard let learned = controller.learned else { return }
        let bytesPerSecond = Int64(min(learned.bytesPerSecond, Double(Int64.max / 2)))
        guard bytesPerSecond > 0 else { return }
        let next = LinkMemory(
            connections: learned.connections, bytesPerSecond: bytesPerSecond, shared: learned.shared,
            learnedAt: now)
        memory.withLock { $0 = next }
    }
}
