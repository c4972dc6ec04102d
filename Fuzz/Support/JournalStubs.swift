// Compiled into the journal target only, in place of Sources/Fastpull/HTTP/Requests.swift: the journal
// needs nothing from that file but the User-Agent it records as its `tool`, and the file itself depends on
// most of the library (configuration, proxies, connections). Keep the value in step with Requests.swift.

/// Stand-in for the library's `Requests`, holding only what `Journal` uses.
enum Requests {
    /// `fastpull/<version>`, as `Requests.userAgent` in the library.
    static let userAgent = "fastpull/\(fastpullVersion)"
}
