/// How TLS connections verify servers.
package struct TLSOptions: Sendable, Hashable {
    /// A PEM file of extra trusted CA certificates, trusted in addition to the system store.
    package var caFile: String? = nil
    /// Skips certificate and hostname verification entirely.
    package var insecure = false

    package init(caFile: String? = nil, insecure: Bool = false) {
        self.caFile = caFile
        self.insecure = insecure
    }
}
