import COpenSSL

/// TLS client state shared by all connections of one download: one `SSL_CTX` holding the trust store
/// (the system store, plus ``TLSOptions/caFile``), TLS 1.2 as the minimum version, the verification
/// mode, and the client certificate and key, when given.
package final class TLSContext: Sendable {
    /// The `SSL_CTX`. Safe to share: it is fully configured in `init` and never changed afterwards, and
    /// OpenSSL 3 allows `SSL_new` from one `SSL_CTX` on many threads at once. Freed in `deinit`.
    nonisolated(unsafe) let context: OpaquePointer
    /// The `BIO_METHOD` that routes TLS records through ``Socket`` (see ``TLSTransport``). Immutable
    /// after `init`, shared read-only by every connection's `BIO`, freed in `deinit` (after every
    /// connection, which keeps the context alive).
    nonisolated(unsafe) let socketMethod: OpaquePointer
    /// The options this context was made with.
    package let options: TLSOptions

    /// Creates the context; fails with `.tlsVerification` if `options.caFile` cannot be loaded, with
    /// `.clientCertificate` if the client certificate or its key cannot be, or do not match.
    package init(options: TLSOptions) throws(NetError) {
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw .tlsHandshake("could not create a TLS context: \(TLSContext.takeErrorText())")
        }
        guard let method = TLSTransport.makeSocketMethod() else {
            SSL_CTX_free(context)
            throw .tlsHandshake("could not create a TLS I/O method: \(TLSContext.takeErrorText())")
        }
        _ = fp_SSL_CTX_set_min_proto_version(context, fp_TLS1_2_VERSION())
        _ = fp_SSL_CTX_set_mode(context, fp_SSL_MODE_AUTO_RETRY())
        SSL_CTX_set_default_read_buffer_len(context, 64 * 1024)
        if options.insecure {
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        } else {
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        }
        _ = SSL_CTX_set_default_verify_paths(context)
        if let caFile = options.caFile {
            guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
                let reason = TLSContext.takeErrorText()
                SSL_CTX_free(context)
                BIO_meth_free(method)
                throw .tlsVerification("could not load CA certificates from \(caFile): \(reason)")
            }
        }
        if let certificate = options.certificateFile {
            let key = options.keyFile ?? certificate
            var problem: String?
            if SSL_CTX_use_certificate_chain_file(context, certificate) != 1 {
                problem =
                    "could not load the client certificate \(certificate): \(TLSContext.takeErrorText())"
            } else if SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) != 1
                || SSL_CTX_check_private_key(context) != 1
            {
                // OpenSSL finds a key of another certificate as it loads it ("key values mismatch").
                problem =
                    "could not use the key \(key) with the client certificate \(certificate): \(TLSContext.takeErrorText())"
            }
            if let problem {
                SSL_CTX_free(context)
                BIO_meth_free(method)
                throw .clientCertificate(problem)
            }
        }
        ERR_clear_error()
        self.context = context
        self.socketMethod = method
        self.options = options
    }

    deinit {
        SSL_CTX_free(context)
        BIO_meth_free(socketMethod)
    }

    /// The text of the oldest error in this thread's OpenSSL error queue (`ERR_error_string_n`), and
    /// clears the queue. "unknown error" when the queue is empty.
    package static func takeErrorText() -> String {
        let code = ERR_get_error()
        defer { ERR_clear_error() }
        guard code != 0 else { return "unknown error" }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
