import Glibc

/// Threads of the operating system, started with `pthread_create` and detached: the lanes, the
/// parked threads and the alarm clock run on them, off Swift's cooperative threads. (Foundation's
/// `Thread` does the same, but linking the whole of Foundation for it costs every process a few
/// milliseconds at start.)
package enum OSThread {
    /// Starts a detached thread that runs `body` and ends.
    package static func detach(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { raw in
                Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
                return nil
            }, box)
        guard result == 0 else {
            Unmanaged<Body>.fromOpaque(box).release()
            fatalError("cannot start a thread: \(String(cString: strerror(result)))")
        }
        pthread_detach(thread)
    }

    /// Sleeps the calling thread for `seconds` (never on a cooperative thread).
    package static func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        var request = timespec(
            tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.towardZero)) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
    }

    private final class Body {
        package let run: @Sendable () -> Void
        package init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}
