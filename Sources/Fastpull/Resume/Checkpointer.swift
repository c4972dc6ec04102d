import Synchronization

/// Saves the scheduler's progress into the journal in the right order: the data first, then the
/// record of it.
///
/// A durable checkpoint (about every second) snapshots progress, `fdatasync`s the `.part` file and
/// then replaces the durable journal; a live checkpoint (twenty times a second) replaces the live
/// journal without syncing, so a killed process loses at most a twentieth of a second of work.
final class Checkpointer: Sendable {
    private let store: JournalStore
    private let template: Journal
    private let scheduler: Scheduler
    private let file: OutputFile
    private let durableOffsets: Mutex<[Int64]>
    private let lastWritten = Mutex<[Int64]?>(nil)

    static let liveInterval: Duration = .milliseconds(50)
    static let durableInterval: Duration = .seconds(1)

    init(store: JournalStore, template: Journal, scheduler: Scheduler, file: OutputFile) {
        self.store = store
        self.template = template
        self.scheduler = scheduler
        self.file = file
        durableOffsets = Mutex(template.segments.map(\.durable))
    }

    /// Records progress now. `durably` syncs the data first and writes the durable journal.
    func checkpoint(durably: Bool) throws(StorageError) {
        let snapshot = scheduler.snapshot()
        let written = snapshot.map(\.written)
        if durably {
            try file.datasync()
            durableOffsets.withLock { $0 = written }
        } else if lastWritten.withLock({ $0 == written }) {
            return
        }
        let durable = durableOffsets.withLock { $0 }
        var journal = template
        journal.segments = snapshot.indices.map { index in
            Journal.Entry(
                start: snapshot[index].start, end: snapshot[index].end, durable: durable[index],
                written: written[index])
        }
        try store.write(journal, durably: durably)
        if !durably { lastWritten.withLock { $0 = written } }
    }

    /// Checkpoints until cancelled. Blocks its thread during syncs: run it on its own executor.
    func run() async throws {
        let clock = ContinuousClock()
        var lastDurable = clock.now
        while true {
            do {
                try await Task.sleep(for: Self.liveInterval)
            } catch {
                return
            }
            let durably = clock.now - lastDurable >= Self.durableInterval
            try checkpoint(durably: durably)
            if durably { lastDurable = clock.now }
        }
    }
}
