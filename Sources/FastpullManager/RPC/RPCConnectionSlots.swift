import Glibc
import Synchronization

/// The RPC server's places for connections, a thread each, and who gives one up when all are taken.
///
/// Every connection is in one of three states: *waiting* for its next request (or for the rest of
/// one that has begun), *busy* while its request is handled and answered, or a *WebSocket* since its
/// upgrade. A new connection always gets a place: when all ``capacity`` are taken, the one that has
/// waited longest for a request (or for the rest of one) gives its place up, else the WebSocket
/// whose client was heard from longest ago (each frame it sends counts);
/// a busy one never does, and only when every place is busy is the newcomer turned away. So idle
/// connections (a client that opens many and sends nothing) cannot lock anyone out of the RPC, and a
/// front-end that reconnects always gets in.
///
/// A place is given up by `shutdown(2)`, which wakes the connection's thread out of its `recv`;
/// the thread then closes the socket through ``release(_:)``, under the same lock, so a descriptor
/// is never shut down after the kernel handed its number to another file.
final class RPCConnectionSlots: Sendable {
    private enum State {
        case waiting
        case busy
        case webSocket
    }

    private struct Slot {
        var state: State
        /// When the state began.
        var since: ContinuousClock.Instant
    }

    /// The most connections served at once.
    let capacity: Int
    private let slots = Mutex<[Int32: Slot]>([:])

    /// Places for `capacity` connections.
    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Gives `fd` a place, making room as the type says; false (and `fd` untouched) when every place
    /// is busy.
    func admit(_ fd: Int32) -> Bool {
        slots.withLock { slots in
            if slots.count >= capacity {
                guard let oldest = Self.oldest(.waiting, in: slots) ?? Self.oldest(.webSocket, in: slots)
                else {
                    return false
                }
                Glibc.shutdown(oldest, Int32(SHUT_RDWR))
                slots[oldest] = nil
            }
            slots[fd] = Slot(state: .waiting, since: .now)
            return true
        }
    }

    private static func oldest(_ state: State, in slots: [Int32: Slot]) -> Int32? {
        slots.filter { $0.value.state == state }.min { $0.value.since < $1.value.since }?.key
    }

    /// `fd` waits for its next request.
    func waiting(_ fd: Int32) { set(fd, .waiting) }

    /// `fd`'s request is being handled and answered; false when its place was given up meanwhile
    /// (the request is then not handled: its answer could not be written).
    func busy(_ fd: Int32) -> Bool { set(fd, .busy) }

    /// `fd` is a WebSocket from now on, or its client was just heard from.
    func webSocket(_ fd: Int32) { set(fd, .webSocket) }

    /// Frees `fd`'s place and closes it.
    func release(_ fd: Int32) {
        slots.withLock { slots in
            slots[fd] = nil
            close(fd)
        }
    }

    /// How many places are taken.
    var count: Int { slots.withLock { $0.count } }

    @discardableResult
    private func set(_ fd: Int32, _ state: State) -> Bool {
        slots.withLock { slots in
            // A connection whose place was given up keeps none: its socket is shut down, and its
            // thread ends at its next read or write.
            guard slots[fd] != nil else { return false }
            slots[fd] = Slot(state: state, since: .now)
            return true
        }
    }
}
