import FastpullHTTP
import FoundationEssentials

/// One file of a batch: where it comes from, where it goes, and the checksums it must match.
public struct BatchItem: Sendable {
    /// Where the file goes.
    public enum Destination: Sendable, Hashable {
        /// This file path.
        case file(URL)
        /// This folder, under the name the server gives in `Content-Disposition`, else the last
        /// component of the URL's path, else `index.html` (see ``BatchItem/Destination/folder(_:)``).
        case folder(URL)
    }

    /// The URL to fetch.
    public var url: URL
    /// Where the verified file goes.
    public var destination: Destination
    /// Checksums the file must match, besides those of the configuration.
    public var checksums: [Checksum]
    /// This file's own configuration, replacing the batch's (its checksums are kept and
    /// ``checksums`` added to them).
    public var configuration: Configuration?

    /// A file fetched from `url` to the file `destination`.
    public init(url: URL, destination: URL, checksums: [Checksum] = [], configuration: Configuration? = nil) {
        self.init(
            url: url, destination: .file(destination), checksums: checksums, configuration: configuration)
    }

    /// A file fetched from `url` to `destination`.
    public init(
        url: URL, destination: Destination, checksums: [Checksum] = [], configuration: Configuration? = nil
    ) {
        self.url = url
        self.destination = destination
        self.checksums = checksums
        self.configuration = configuration
    }
}

/// How a batch runs.
public struct BatchOptions: Sendable {
    /// What to do when a file already exists at an item's destination.
    public enum ExistingFiles: Sendable, Hashable {
        /// Keep it, without fetching anything, when it matches every checksum known for it (given, or
        /// from a checksum file); otherwise fetch the file again and replace it once verified.
        case keepIfVerified
        /// Keep it when it matches every checksum known for it, or when a run saved it and the server
        /// still offers that version; fetch it again in its place when the server offers another;
        /// otherwise fail the item with ``FastpullError/Code/localIO`` and leave the file alone (the
        /// default; the command line without `--force`).
        case refuse
        /// Always fetch again and replace it once verified.
        case replace
        /// Keep whatever is there without looking at it, and count the item as done (wget's `-nc`):
        /// a script that fetches what is missing from a folder.
        case skip
        /// Leave it alone and save the download beside it, under the first free name of `name.1`,
        /// `name.2`, … (wget without `-nc`, aria2's `--auto-file-renaming`). A name whose partial
        /// download is there (`name.1.part`) is that download's, resumed.
        case rename
    }

    /// How many files are fetched at once (default ``Configuration/Defaults/parallelFiles``).
    public var parallelFiles: Int
    /// What to do with a file that already exists (default ``ExistingFiles/refuse``, as the command
    /// line and a lone download do). It decides for the batch's items, whatever their configuration's
    /// `resume.replacesExistingFile` says.
    public var existingFiles: ExistingFiles
    /// Whether ``Batch/events`` keeps every event from the moment the batch is created (default
    /// true). A caller that never reads them sets false: then no event is kept, nothing wakes for
    /// each, and the sequence, if asked for after all, tells only what happens from then on.
    public var keepsEvents: Bool
    /// Files no item ever writes, whoever names them (the item's own output, the server's
    /// `Content-Disposition`): a program's own files in the folder it saves into, such as a download
    /// manager's list and its secret. An item whose output is one of them fails (default: none).
    public var reservedPaths: [String]

    /// Creates options; every parameter has the documented default.
    public init(
        parallelFiles: Int = Configuration.Defaults.parallelFiles,
        existingFiles: ExistingFiles = .refuse, keepsEvents: Bool = true, reservedPaths: [String] = []
    ) {
        self.parallelFiles = parallelFiles
        self.existingFiles = existingFiles
        self.keepsEvents = keepsEvents
        self.reservedPaths = reservedPaths
    }
}

/// What became of one item of a batch.
public struct BatchOutcome: Sendable {
    /// The item's position in the batch.
    public var index: Int
    /// The item.
    public var item: BatchItem
    /// The report of the verified file, or the error that stopped it.
    public var result: Result<Report, FastpullError>
    /// True when the file was already in place, verified, and nothing was fetched.
    public var alreadyPresent: Bool

    /// The report, when the item succeeded.
    public var report: Report? { try? result.get() }

    /// The error, when the item failed.
    public var error: FastpullError? {
        if case .failure(let error) = result { return error }
        return nil
    }
}

/// An event of one download of a batch: which item, and what happened.
public struct BatchEvent: Sendable, Equatable {
    /// The item's position in the batch.
    public var index: Int
    /// The event, as ``Download/events`` delivers it.
    public var event: Event

    /// Creates a batch event.
    public init(index: Int, event: Event) {
        self.index = index
        self.event = event
    }
}
