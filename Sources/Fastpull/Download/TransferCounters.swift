import Synchronization

/// Live counters of one download, updated by the connections and read by progress displays.
final class TransferCounters: Sendable {
    let bytesWritten = Atomic<Int64>(0)
    let bytesFetched = Atomic<Int64>(0)
    let totalBytes = Atomic<Int64>(-1)
    let activeConnections = Atomic<Int>(0)
    /// How many connections the download means to have now.
    let targetConnections = Atomic<Int>(0)
    let retries = Atomic<Int>(0)

    func addWritten(_ count: Int64) {
        bytesWritten.add(count, ordering: .relaxed)
        bytesFetched.add(count, ordering: .relaxed)
    }

    var snapshot: TransferProgress {
        let total = totalBytes.load(ordering: .relaxed)
        return TransferProgress(
            bytesWritten: bytesWritten.load(ordering: .relaxed),
            totalBytes: total >= 0 ? total : nil,
            activeConnections: activeConnections.load(ordering: .relaxed),
            retries: retries.load(ordering: .relaxed))
    }
}

/// A moment's view of a running download.
public struct TransferProgress: Sendable, Equatable {
    /// Bytes in the output file so far.
    public var bytesWritten: Int64
    /// The file's size, once known.
    public var totalBytes: Int64?
    /// Connections currently transferring.
    public var activeConnections: Int
    /// Retries so far.
    public var retries: Int

    /// The fraction done, 0...1, when the size is known.
    public var fraction: Double? {
        guard let totalBytes else { return nil }
        return totalBytes == 0 ? 1 : Double(bytesWritten) / Double(totalBytes)
    }
}
