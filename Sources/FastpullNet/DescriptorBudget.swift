import FoundationEssentials
import Glibc
import Synchronization

/// How many more connections this process can open before it runs out of file descriptors
/// (`ulimit -n`): each needs a socket and, on plain HTTP, the two ends of a splice pipe, and the
/// journal needs a few of its own now and then.
package enum DescriptorBudget {
    /// Descriptors one connection may hold: its socket and its splice pipe.
    package static let perConnection = 3
    /// Descriptors left free for the journal, the hasher and the caller.
    package static let reserve = 16

    /// The process's limit on open files (the soft `RLIMIT_NOFILE`), or nil when it has none.
    package static var limit: Int? {
        var value = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &value) == 0, value.rlim_cur != rlim_t.max else {
            return nil
        }
        return Int(clamping: value.rlim_cur)
    }

    /// Descriptors open in this process now (the entries of `/proc/self/fd`), or nil when unknown.
    package static var open: Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")).map(\.count)
    }

    /// The most connections that fit in what is left, or nil when there is no limit to speak of.
    package static func connections() -> Int? {
        guard let limit, let open else { return nil }
        return max(1, (limit - open - reserve) / perConnection)
    }

    /// Whether a new socket would leave a descriptor free: at least two are (checked by opening
    /// `/dev/null` twice, each closed at once). The process must never take its last one: Dispatch,
    /// under Swift's own tasks, opens files in `/proc` to watch its threads and stops the process
    /// (SIGILL) when it cannot, so a connection that would take the last descriptor is refused as out
    /// of descriptors, and shed like one.
    package static var leavesOneFree: Bool {
        let first = Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard first >= 0 else { return false }
        defer { close(first) }
        let second = Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard second >= 0 else { return false }
        close(second)
        return true
    }

    /// Whether the process has a descriptor free.
    package static var hasOneFree: Bool {
        let probe = Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard probe >= 0 else { return false }
        close(probe)
        return true
    }

    /// Descriptors held back for the moment the process has none left (see ``leavesOneFree``).
    private static let spares = PlainMutex<[Int32]>([])
    private static let spareCount = 2

    /// Holds up to two spare descriptors, while that leaves one free (a download calls it as it
    /// starts, the journal after a save that needed one).
    package static func reserveSpares() {
        spares.withLock { spares in
            while spares.count < spareCount, leavesOneFree {
                let spare = Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC)
                guard spare >= 0 else { break }
                spares.append(spare)
            }
        }
    }

    /// Gives a spare back when the process has no descriptor to spare (its open-file limit was lowered,
    /// or something else in the process took them): called at every tick of a download, so that
    /// Dispatch finds one while connections are shed.
    package static func keepOneFree() {
        guard !leavesOneFree else { return }
        _ = giveUpSpare()
    }

    /// Closes a spare, for a file that must be opened now (the journal); false when none is left.
    /// ``reserveSpares()`` takes it again once there is room.
    package static func giveUpSpare() -> Bool {
        spares.withLock { spares in
            guard let spare = spares.popLast() else { return false }
            close(spare)
            return true
        }
    }
}
