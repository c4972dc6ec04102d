/// Where a download of the list is in its life, by aria2's names (what `aria2.tellStatus` reports).
public enum ItemStatus: String, Sendable, CaseIterable, Codable {
    /// In the queue, to start when a place is free.
    case waiting
    /// Downloading now.
    case active
    /// Held by the user: it starts only once unpaused.
    case paused
    /// Done and verified: history, never fetched again.
    case complete
    /// Failed: history, until it is retried.
    case error
    /// Removed by the user: history.
    case removed

    /// Whether the item is history (complete, error, removed) rather than in the queue.
    public var isStopped: Bool { self == .complete || self == .error || self == .removed }
}

/// What can happen to a download of the list. The one place that says which status each leads to
/// from which: ``ItemStatus/applying(_:)``.
public enum ItemEvent: String, Sendable, CaseIterable {
    /// A place is free: the first waiting item starts.
    case start
    /// The user pauses it (waiting or active; an active one's transfer stops with its journal saved).
    case pause
    /// The user lets a paused one wait for a place again.
    case unpause
    /// Its file is complete and verified.
    case finish
    /// It failed.
    case fail
    /// The user removes it (its partial file and journal stay unless asked otherwise).
    case remove
    /// A failed one is tried again (by the user, or when the network comes back).
    case retry
    /// The manager stopped (quit, crash, power cut) while it was active: it waits again, first in
    /// line, and resumes from its journal.
    case interrupt
    /// Its transfer failed because the network is away (no route to its host): it waits again, to
    /// resume from its journal once the network is back, instead of failing.
    case networkLost
}

extension ItemStatus {
    /// The status `event` leads to from this one, or nil where it cannot happen (removing something
    /// already removed, finishing something that is not running, …).
    public func applying(_ event: ItemEvent) -> ItemStatus? {
        switch (event, self) {
        case (.start, .waiting): .active
        case (.pause, .waiting), (.pause, .active): .paused
        case (.unpause, .paused): .waiting
        case (.finish, .active): .complete
        case (.fail, .active): .error
        case (.remove, .waiting), (.remove, .active), (.remove, .paused): .removed
        case (.retry, .error): .waiting
        case (.interrupt, .active), (.networkLost, .active): .waiting
        default: nil
        }
    }
}
