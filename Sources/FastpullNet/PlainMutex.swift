import Glibc

/// A lock around a value, for critical sections of a few instructions that many threads enter: the
/// connections a batch's files share, the segment table, the per-host connection count.
///
/// The standard library's `Mutex` waits on a priority-inheriting futex on Linux. Once two threads
/// meet at one, the kernel hands the lock to the sleeper at every unlock, so each thread that comes
/// next finds it held by a thread not yet running and sleeps too: a convoy. Three hundred small files
/// over sixteen lanes met that way at the shared connection cache in a quarter of their lookups, each
/// meeting two context switches. This lock is a plain mutex, adaptive by default: a thread that
/// finds it taken spins briefly (the holder is about to let go), sleeps only then, and a running
/// thread may take it before a woken one.
///
/// `@unchecked Sendable`: `value` (itself `Sendable`) is read and written only inside
/// ``withLock(_:)``, while the mutex is held.
package final class PlainMutex<Value: Sendable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// `spins`: whether a thread that finds the lock taken spins briefly before it sleeps (right for
    /// a few instructions; not for a holder that copies megabytes, the engine's `WriterLock`).
    package init(_ value: Value, spins: Bool = true) {
        self.value = value
        mutex = .allocate(capacity: 1)
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(
            &attributes, Int32(spins ? PTHREAD_MUTEX_ADAPTIVE_NP : PTHREAD_MUTEX_NORMAL))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock.
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result)
        throws(Failure)
        -> Result
    {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
