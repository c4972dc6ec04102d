/// When a connection sends the request for its next window before the answer it is reading has
/// ended (HTTP/1.1 pipelining), so that the next answer's first byte follows the current one's last
/// instead of a round trip later.
public enum Pipelining: String, Sendable, Hashable, CaseIterable {
    /// Where a connection's requests are measured to cost at least 2 ms (the wait for their first
    /// byte: a real network's round trip, not loopback's or a LAN's), the default. A server that
    /// leaves a request sent ahead unanswered gets no more of them in that download.
    case automatic = "auto"
    /// Whatever requests cost (still not after a server left one unanswered).
    case always = "on"
    /// Never: every request waits for the answer before it.
    case never = "off"
}
