/// How TLS connections verify servers.
struct TLSOptions: Sendable, Hashable {
    /// A PEM file of extra trusted CA certificates, trusted in addition to the system store.
    var caFile: String? = nil
    /// Skips certificate and hostname verification entirely.
    var insecure = false
}
