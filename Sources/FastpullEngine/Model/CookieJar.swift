import FastpullHTTP
import FoundationEssentials

/// The cookies of one or more downloads (RFC 6265): a `Set-Cookie` answer (a redirect's too) stores
/// its cookie, and every later request sends the cookies whose domain, path and `Secure` allow it —
/// the download a set-cookie-then-redirect link leads to gets them. Give the same jar to several
/// downloads to share them; read and write Netscape cookie files (curl's `-b`/`-c`, wget's and
/// aria2's `--load-cookies`/`--save-cookies`) to keep them between runs.
public final class CookieJar: Sendable {
    package let store = CookieStore()

    /// An empty jar.
    public init() {}

    /// Adds the cookies of a Netscape cookie file's text.
    ///
    /// - Returns: the numbers of the lines that are neither comments nor cookies (skipped).
    @discardableResult
    public func load(netscape text: String) -> [Int] { store.load(netscape: text) }

    /// The cookies that have not expired, as a Netscape cookie file.
    public var netscape: String { store.netscape() }

    /// How many cookies the jar holds.
    public var count: Int { store.all.count }

    /// The `Cookie` value a request to `url` would carry, nil when none.
    public func header(for url: URL) -> String? { store.header(for: url) }
}
