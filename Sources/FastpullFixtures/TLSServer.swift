import COpenSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The server side of TLS: one `SSL_CTX` with a certificate and key, shared by every connection.
///
/// `@unchecked Sendable` is safe because `context` is configured completely in `init` and never changed
/// afterwards; OpenSSL allows `SSL_new` on one `SSL_CTX` from several threads at once (the context is
/// reference counted and its shared caches are locked internally). Each `SSL` made from it is used only by
/// its connection's thread, and holds its own reference to the context, so freeing the context in
/// `deinit` cannot pull it from under a live connection.
final class TLSServerContext: @unchecked Sendable {
    private let context: OpaquePointer

    /// Loads `certificateFile` (PEM, leaf first; a chain may follow) and `keyFile` (PEM); with
    /// `clientCertificateAuthority`, requires each client to present a certificate it issued.
    init(certificateFile: String, keyFile: String, clientCertificateAuthority: String? = nil)
        throws(FixtureServerError)
    {
        // SSL_write on a socket whose peer has gone raises SIGPIPE (OpenSSL writes with write(2), which
        // has no MSG_NOSIGNAL). A test server must survive clients that hang up, so ignore it.
        signal(SIGPIPE, SIG_IGN)
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw .tls("SSL_CTX_new failed: \(Self.errorQueueText())")
        }
        self.context = context
        _ = fp_SSL_CTX_set_min_proto_version(context, fp_TLS1_2_VERSION())
        guard SSL_CTX_use_certificate_chain_file(context, certificateFile) == 1 else {
            throw .tls("cannot load certificate \(certificateFile): \(Self.errorQueueText())")
        }
        guard SSL_CTX_use_PrivateKey_file(context, keyFile, SSL_FILETYPE_PEM) == 1,
            SSL_CTX_check_private_key(context) == 1
        else {
            throw .tls("cannot load private key \(keyFile): \(Self.errorQueueText())")
        }
        if let authority = clientCertificateAuthority {
            guard SSL_CTX_load_verify_locations(context, authority, nil) == 1 else {
                throw .tls(
                    "cannot load client certificate authorities \(authority): \(Self.errorQueueText())")
            }
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        }
    }

    deinit {
        SSL_CTX_free(context)
    }

    /// Performs the server handshake on the connected `socket` (blocking). Returns nil if it fails, for
    /// example because the client rejected the certificate.
    func accept(socket: Int32) -> TLSStream? {
        ERR_clear_error()
        guard let ssl = SSL_new(context) else { return nil }
        guard SSL_set_fd(ssl, socket) == 1, SSL_accept(ssl) == 1 else {
            ERR_clear_error()
            SSL_free(ssl)
            return nil
        }
        return TLSStream(ssl: ssl)
    }

    /// Drains OpenSSL's error queue of this thread into one line.
    static func errorQueueText() -> String {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(
                String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages.isEmpty ? "unknown OpenSSL error" : messages.joined(separator: "; ")
    }
}

/// TLS over one accepted socket. Owned and used by its connection's thread only.
final class TLSStream: ConnectionStream {
    private let ssl: OpaquePointer

    init(ssl: OpaquePointer) {
        self.ssl = ssl
    }

    deinit {
        SSL_free(ssl)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard !buffer.isEmpty else { return 0 }
        let count = SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        if count <= 0 { ERR_clear_error() }
        return max(0, Int(count))
    }

    func write(_ bytes: UnsafeRawBufferPointer, more: Bool) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        var written = 0
        while written < bytes.count {
            let count = SSL_write(ssl, base + written, Int32(clamping: bytes.count - written))
            if count <= 0 {
                ERR_clear_error()
                return written
            }
            written += Int(count)
        }
        return written
    }

    func finish() {
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }
}
