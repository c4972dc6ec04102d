import FastpullNet
import Synchronization

/// Saves the scheduler's progress into the journal in the right order: the data first, then the
/// record of it.
///
/// A durable checkpoint (about every second) snapshots progress, `fdatasync`s the `.part` file and
/// then replaces the durable journal; a live checkpoint (a hundred times a second) replaces the live
/// journal without syncing, so a killed process loses at most a hundredth of a second of work (and
/// what the server had sent that had not reached it yet).
///
/// A process short of file descriptors (a low `ulimit -n`, or a caller holding many) must still save
/// its progress: a save that finds none gets one of the process's spares
/// (``DescriptorBudget/giveUpSpare()``); connections that find none are shed as they reconnect.
package final class Checkpointer: Sendable {
    private let store: JournalStore
    private let template: Journal
    private let scheduler: Scheduler
    private let file: OutputFile
    /// Written bytes at the last sync, by segment start (segments split, but starts never move).
    private let durableOffsets: Mutex<[Int64: Int64]>
    private let lastWritten = Mutex<[Segment]?>(nil)
    private let saved: Atomic<Int64>
    /// What the download has learned of its link, saved with its progress.
    let link: LinkMemoryCell

    static let liveInterval: Duration = .milliseconds(10)
    static let durableInterval: Duration = .seconds(1)

    init(
        store: JournalStore, template: Journal, scheduler: Scheduler, file: OutputFile,
        link: LinkMemoryCell = LinkMemoryCell(nil)
    ) {
        self.store = store
        self.link = link
        self.template = template
        self.scheduler = scheduler
        self.file = file
        durableOffsets = Mutex(
            Dictionary(uniqueKeysWithValues: template.segments.map { ($0.start, $0.durable) }))
        saved = Atomic(template.segments.reduce(0) { $0 + $1.durable })
    }

    /// The bytes the last durable journal records as synced: what a run after any stop would keep.
    var savedBytes: Int64 { saved.load(ordering: .relaxed) }

    /// Records progress now. `durably` syncs the data first and writes the durable journal.
    func checkpoint(durably: Bool) throws(StorageError) {
        let snapshot = scheduler.snapshot()
        if durably {
            try file.datasync()
            durableOffsets.withLock { durable in
                durable = Dictionary(uniqueKeysWithValues: snapshot.map { ($0.start, $0.written) })
            }
        } else if lastWritten.withLock({ $0 == snapshot }) {
            return
        }
        let durable = durableOffsets.withLock { $0 }
        var journal = template
        journal.link = link.current
        journal.segments = snapshot.map { segment in
            Journal.Entry(
                start: segment.start, end: segment.end,
                durable: min(durable[segment.start] ?? 0, segment.written),
                written: segment.written)
        }
        try write(journal, durably: durably)
        if durably { saved.store(journal.segments.reduce(0) { $0 + $1.durable }, ordering: .relaxed) }
        if !durably { lastWritten.withLock { $0 = snapshot } }
    }

    /// Writes the journal; out of descriptors, once more with a spare given up for it.
    private func write(_ journal: Journal, durably: Bool) throws(StorageError) {
        let failure: StorageError
        do {
            try store.write(journal, durably: durably)
            return
        } catch {
            failure = error
        }
        guard failure.isOutOfDescriptors, DescriptorBudget.giveUpSpare() else { throw failure }
        defer { DescriptorBudget.reserveSpares() }
        try store.write(journal, durably: durably)
    }

    /// Checkpoints until cancelled. Blocks its thread during syncs: run it on its own executor.
    func run() async throws {
        let clock = ContinuousClock()
        var lastDurable = clock.now
        while true {
            do {
                try await AlarmClock.sleep(for: Self.liveInterval)
            } catch {
                return
            }
            let durably = clock.now - lastDurable >= Self.durableInterval
            if durably {
                do {
                    try checkpoint(durably: true)
                    lastDurable = clock.now
                } catch {
                    // Out of descriptors, it is tried again at the next tick, once connections have
                    // given some back (the durable journal before still holds); else the run fails.
                    guard error.isOutOfDescriptors else { throw error }
                }
            } else {
                // A live save is best effort (out of descriptors for a moment, say): the next one, and
                // the durable ones, still count.
                try? checkpoint(durably: false)
            }
        }
    }
}
