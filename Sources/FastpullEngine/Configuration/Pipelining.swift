/// When a connection sends the request for its next window before the answer it is reading has
/// ended (HTTP/1.1 pipelining), so that the next answer's first byte follows the current one's last
/// instead of a round trip later.
public enum Pipelining: String, Sendable, Hashable, CaseIterable {
    /// Where the path's round trip (the quickest connection setup) is 2 ms or more: a real
    /// network's, not loopback's or a LAN's; the default. A server that leaves a request sent ahead
    /// unanswered gets no more of them in that download.
    case automatic = "auto"
    /// Whatever the round trip (still not after a server left one unanswered).
    case always = "on"
    /// Never: every request waits for the answer before it.
    case never = "off"
}
