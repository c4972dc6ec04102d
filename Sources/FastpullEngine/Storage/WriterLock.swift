import FastpullNet

/// Lets one thread at a time write into a file, the others sleeping until it is done.
///
/// The kernel takes a file's inode lock for every `pwrite` and `splice` into it anyway (tmpfs, ext4
/// and XFS alike), so writes from many connections never overlap; but a writer that finds that lock
/// taken spins on the CPU while the holder copies its bytes. With sixteen connections on two cores
/// that spinning took 5 % of the download's CPU time, time that decrypting TLS records needed. A
/// writer waiting here sleeps instead (a plain futex: no spinning, no priority inheritance).
package final class WriterLock: Sendable {
    private let lock = PlainMutex((), spins: false)

    /// Runs `body` while holding the lock.
    func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        try lock.withLock { (_: inout Void) throws(Failure) -> Result in try body() }
    }
}
