/// How TLS connections verify servers, and the certificate they present when a server asks.
package struct TLSOptions: Sendable, Hashable {
    /// A PEM file of extra trusted CA certificates, trusted in addition to the system store.
    package var caFile: String? = nil
    /// Skips certificate and hostname verification entirely.
    package var insecure = false
    /// A PEM file of the client certificate (its chain may follow) presented to servers that ask.
    package var certificateFile: String? = nil
    /// The PEM file of the certificate's private key (unencrypted); nil when it is in
    /// ``certificateFile``.
    package var keyFile: String? = nil

    package init(
        caFile: String? = nil, insecure: Bool = false, certificateFile: String? = nil, keyFile: String? = nil
    ) {
        self.caFile = caFile
        self.insecure = insecure
        self.certificateFile = certificateFile
        self.keyFile = keyFile
    }
}
