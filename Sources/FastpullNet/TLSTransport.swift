import COpenSSL
import Synchronization

/// A TLS client connection (OpenSSL) over a ``Socket``.
///
/// OpenSSL reads and writes through a custom `BIO` that calls the socket's `read`/`write`, so writes use
/// `MSG_NOSIGNAL` (the stock socket `BIO` uses `write(2)`, which raises `SIGPIPE` on a closed peer), and
/// idle timeouts, resets and cancellation are classified exactly as for plain TCP.
///
/// Thread safety: the `SSL` object is only touched under `state`'s lock (by `read`, `write` and
/// `close`, normally all on the connection's thread). `shutdown()` only touches the thread-safe socket,
/// which makes a blocked `read`/`write` return and so release the lock promptly.
package final class TLSTransport: Transport {
    /// What the `BIO` callbacks need; reached through the `BIO`'s data pointer. Only used while `state`'s
    /// lock is held, by the thread running the OpenSSL call.
    fileprivate final class Link {
        package let socket: Socket
        /// The socket error behind the last failed `BIO` call, to report instead of OpenSSL's view of it.
        package var pendingError: NetError?
        /// True once the socket reported end of stream.
        package var sawEndOfStream = false
        /// While set, the `BIO` takes only what the socket holds now and asks OpenSSL to retry instead
        /// of waiting (``TLSTransport/read(into:)`` gathering more records into one read).
        package var onlyWhatHasArrived = false

        package init(socket: Socket) { self.socket = socket }
    }

    /// `@unchecked Sendable` is sound: a `State` exists only inside `state`'s `Mutex`, so the `SSL` object
    /// and the `Link` are used by one thread at a time, and the `Link` is reachable otherwise only through
    /// the `BIO`, i.e. from OpenSSL calls made while that lock is held. (Without it, region isolation
    /// merges the `SSL` pointer with the caller's buffer and rejects the lock's closure.)
    private struct State: @unchecked Sendable {
        /// The `SSL` object, nil once closed.
        package var ssl: OpaquePointer?
        /// Kept alive for the `BIO`, which points at it without a reference.
        package let link: Link
        /// A read failure that came after a read had gathered bytes: the next read throws it.
        package var deferredError: NetError?
    }

    private let state: Mutex<State>
    private let socket: Socket
    /// Keeps the `SSL_CTX` (and the `BIO_METHOD`) alive as long as the `SSL` object.
    private let context: TLSContext
    /// `host:port` for error messages.
    package let peer: String

    /// Performs the TLS handshake over `socket`: SNI with `host` unless it is an IP literal, and (unless
    /// the context is insecure) verification of the chain and of `host` as a DNS name or IP address.
    /// Each blocking step waits at most the socket's current timeout. On failure the socket is left open
    /// for the caller to close.
    package init(socket: Socket, host: String, context: TLSContext) throws(NetError) {
        let peer = socket.peer
        let name = host.hasSuffix(".") ? String(host.dropLast()) : host
        guard let ssl = SSL_new(context.context) else {
            throw .tlsHandshake("TLS setup for \(peer) failed: \(TLSContext.takeErrorText())")
        }
        // Read ahead into a large buffer: one recv fetches every record that has arrived (up to the
        // buffer), instead of a record's header and then its body.
        SSL_set_read_ahead(ssl, 1)
        SSL_set_default_read_buffer_len(ssl, TLSTransport.readAheadBytes)
        let link = Link(socket: socket)
        guard let bio = BIO_new(context.socketMethod) else {
            SSL_free(ssl)
            throw .tlsHandshake("TLS setup for \(peer) failed: \(TLSContext.takeErrorText())")
        }
        BIO_set_data(bio, Unmanaged.passUnretained(link).toOpaque())
        BIO_set_init(bio, 1)
        SSL_set_bio(ssl, bio, bio)  // the SSL object now owns the BIO
        do throws(NetError) {
            try TLSTransport.configure(ssl, name: name, insecure: context.options.insecure, peer: peer)
            ERR_clear_error()
            let result = SSL_connect(ssl)
            if result != 1 {
                throw TLSTransport.handshakeFailure(
                    ssl, result: result, link: link, name: name, peer: peer,
                    insecure: context.options.insecure)
            }
        } catch {
            SSL_free(ssl)
            throw error
        }
        self.state = Mutex(State(ssl: ssl, link: link, deferredError: nil))
        self.socket = socket
        self.context = context
        self.peer = peer
    }

    deinit {
        state.withLock { state in
            if let ssl = state.ssl { SSL_free(ssl) }
            state.ssl = nil
        }
    }

    /// How much ciphertext one `recv` may bring in for OpenSSL to decrypt.
    package static let readAheadBytes = 256 * 1024

    /// Reads application data: waits for the first record, then adds every further record that has
    /// already arrived, up to `buffer.count`, so that a fast transfer is handed on in large pieces (one
    /// positioned write and one progress update per piece, not per 16 KiB record). 0 once the server
    /// sent close_notify. A failure after some bytes were gathered is reported by the next read.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(NetError) -> Int {
        guard buffer.count > 0 else { return 0 }
        return try state.withLock { (state) throws(NetError) -> Int in
            guard let ssl = state.ssl else { throw .cancelled }
            if let deferred = state.deferredError {
                state.deferredError = nil
                throw deferred
            }
            var total: Int
            switch try Self.readRecord(ssl, into: buffer, link: state.link, transport: self) {
            case .bytes(let count): total = count
            case .closed, .wouldWait: return 0
            }
            state.link.onlyWhatHasArrived = true
            defer { state.link.onlyWhatHasArrived = false }
            while total < buffer.count {
                let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[total...])
                do throws(NetError) {
                    guard
                        case .bytes(let count) = try Self.readRecord(
                            ssl, into: rest, link: state.link, transport: self), count > 0
                    else { break }
                    total += count
                } catch {
                    state.deferredError = error
                    break
                }
            }
            return total
        }
    }

    /// What one `SSL_read_ex` gave.
    private enum RecordRead {
        case bytes(Int)
        /// The server sent close_notify.
        case closed
        /// The link only takes what has arrived, and nothing more has.
        case wouldWait
    }

    private static func readRecord(
        _ ssl: OpaquePointer, into buffer: UnsafeMutableRawBufferPointer, link: Link, transport: TLSTransport
    ) throws(NetError) -> RecordRead {
        link.pendingError = nil
        ERR_clear_error()
        var count = 0
        let result = SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count)
        if result == 1 { return .bytes(count) }
        let code = SSL_get_error(ssl, result)
        if code == SSL_ERROR_ZERO_RETURN {
            ERR_clear_error()
            return .closed
        }
        if code == SSL_ERROR_WANT_READ && link.onlyWhatHasArrived && link.pendingError == nil {
            ERR_clear_error()
            return .wouldWait
        }
        throw transport.failure(ssl, result: result, link: link, during: "read")
    }

    /// The socket's `SO_RCVLOWAT` (for tests: it stays at one byte under TLS).
    package var receiveLowWater: Int? { socket.receiveLowWater }

    /// Writes all of `bytes` as TLS records.
    package func write(_ bytes: UnsafeRawBufferPointer) throws(NetError) {
        try state.withLock { (state) throws(NetError) in
            guard let ssl = state.ssl else { throw .cancelled }
            var offset = 0
            while offset < bytes.count {
                state.link.pendingError = nil
                ERR_clear_error()
                var written = 0
                let result = SSL_write_ex(ssl, bytes.baseAddress! + offset, bytes.count - offset, &written)
                guard result == 1 else {
                    throw failure(ssl, result: result, link: state.link, during: "write")
                }
                offset += written
            }
        }
    }

    /// The socket's: closed when the server closed it. Bytes waiting may be a TLS session ticket, so
    /// they do not count against the connection (a close_notify among them shows at the next read, and
    /// the request is then retried on a new connection).
    package func idleState() -> IdleState {
        socket.idleState() == .closed ? .closed : .quiet
    }

    /// Shuts down the underlying socket; a blocked read or write returns promptly. Thread-safe.
    package func shutdown() {
        socket.shutdown()
    }

    /// Frees the `SSL` object and closes the socket. Idempotent; if another thread is inside `read` or
    /// `write`, the socket is shut down first so that call returns and releases the lock.
    package func close() {
        let ssl: OpaquePointer?
        if let taken = state.withLockIfAvailable({ $0.ssl.take() }) {
            ssl = taken
        } else {
            socket.shutdown()
            ssl = state.withLock { $0.ssl.take() }
        }
        if let ssl { SSL_free(ssl) }
        socket.close()
    }

    /// SNI and hostname/IP verification for `name`.
    private static func configure(
        _ ssl: OpaquePointer, name: String, insecure: Bool, peer: String
    ) throws(NetError) {
        let isLiteral = Resolver.isIPLiteral(name)
        if !isLiteral && fp_SSL_set_tlsext_host_name(ssl, name) != 1 {
            throw .tlsHandshake("TLS setup for \(peer) failed: cannot send server name \(name)")
        }
        guard !insecure else { return }
        let configured: Bool
        if isLiteral {
            configured = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1
        } else {
            SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            configured = SSL_set1_host(ssl, name) == 1
        }
        guard configured else {
            throw .tlsHandshake("TLS setup for \(peer) failed: cannot verify the name \(name)")
        }
    }

    /// Classifies a failed `SSL_connect`.
    private static func handshakeFailure(
        _ ssl: OpaquePointer, result: Int32, link: Link, name: String, peer: String, insecure: Bool
    ) -> NetError {
        defer { ERR_clear_error() }
        switch link.pendingError {
        case .timeout?:
            return .timeout("TLS handshake")
        case .reset(let sentence)?:
            return .reset("\(sentence) (TLS handshake)")
        case let pending?:
            return pending
        case nil:
            break
        }
        if link.socket.isShutDown { return .cancelled }
        let verification = SSL_get_verify_result(ssl)
        if !insecure && verification != X509_V_OK {
            let reason = String(cString: X509_verify_cert_error_string(verification))
            return .tlsVerification("TLS certificate verification failed for \(name): \(reason)")
        }
        if link.sawEndOfStream {
            return .tlsHandshake("TLS handshake with \(peer) failed: the server closed the connection")
        }
        return .tlsHandshake("TLS handshake with \(peer) failed: \(TLSContext.takeErrorText())")
    }

    /// The alerts of a server that wants a client certificate, or refuses the one it got.
    private static let certificateAlerts: Set<Int32> = [
        SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED, SSL_R_SSLV3_ALERT_BAD_CERTIFICATE,
        SSL_R_TLSV1_ALERT_UNKNOWN_CA, SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN,
    ]

    /// Classifies a failed `SSL_read_ex`/`SSL_write_ex`.
    private func failure(
        _ ssl: OpaquePointer, result: Int32, link: Link, during operation: String
    ) -> NetError {
        defer { ERR_clear_error() }
        if let pending = link.pendingError { return pending }
        if socket.isShutDown { return .cancelled }
        if link.sawEndOfStream {
            return .reset("\(peer) closed the connection without TLS close_notify during \(operation)")
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .timeout(operation)
        case SSL_ERROR_SSL:
            // A server that wants a client certificate (TLS 1.3 tells it after the handshake, at the
            // first read) will not change its mind when asked again.
            if Self.certificateAlerts.contains(ERR_GET_REASON(ERR_peek_error())) {
                return .clientCertificate(
                    "\(peer) refused the connection: \(TLSContext.takeErrorText()) (a client certificate it accepts is needed: --cert)"
                )
            }
            return .reset("TLS error from \(peer) during \(operation): \(TLSContext.takeErrorText())")
        default:
            return .reset("connection to \(peer) lost during \(operation)")
        }
    }

    /// The `BIO_METHOD` that moves TLS records through a ``Link``'s socket. Made once per
    /// ``TLSContext``.
    package static func makeSocketMethod() -> OpaquePointer? {
        guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "fastpull socket")
        else { return nil }
        _ = BIO_meth_set_read_ex(method) { bio, data, length, readBytes in
            readBytes?.pointee = 0
            guard let bio, let data, let link = TLSTransport.link(of: bio) else { return 0 }
            BIO_clear_flags(
                bio, BIO_FLAGS_READ | BIO_FLAGS_WRITE | BIO_FLAGS_IO_SPECIAL | BIO_FLAGS_SHOULD_RETRY)
            do throws(NetError) {
                let buffer = UnsafeMutableRawBufferPointer(start: data, count: length)
                let received: Int? =
                    link.onlyWhatHasArrived
                    ? try link.socket.readAvailable(into: buffer) : try link.socket.read(into: buffer)
                guard let count = received else {
                    BIO_set_flags(bio, BIO_FLAGS_READ | BIO_FLAGS_SHOULD_RETRY)
                    return 0
                }
                if count == 0 {
                    link.sawEndOfStream = true
                    return 0
                }
                readBytes?.pointee = count
                return 1
            } catch {
                link.pendingError = error
                return 0
            }
        }
        _ = BIO_meth_set_write_ex(method) { bio, data, length, writtenBytes in
            writtenBytes?.pointee = 0
            guard let bio, let data, let link = TLSTransport.link(of: bio) else { return 0 }
            do throws(NetError) {
                try link.socket.write(UnsafeRawBufferPointer(start: data, count: length))
                writtenBytes?.pointee = length
                return 1
            } catch {
                link.pendingError = error
                return 0
            }
        }
        _ = BIO_meth_set_ctrl(method) { bio, command, _, _ in
            switch command {
            case BIO_CTRL_FLUSH:
                return 1
            case BIO_CTRL_EOF:
                guard let bio, let link = TLSTransport.link(of: bio) else { return 1 }
                return link.sawEndOfStream ? 1 : 0
            default:
                return 0
            }
        }
        return method
    }

    private static func link(of bio: OpaquePointer) -> Link? {
        guard let pointer = BIO_get_data(bio) else { return nil }
        return Unmanaged<Link>.fromOpaque(pointer).takeUnretainedValue()
    }
}
