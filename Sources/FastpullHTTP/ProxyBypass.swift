import FastpullNet
import FoundationEssentials

/// The hosts reached without a proxy: a `NO_PROXY` list, matched as curl matches it.
///
/// Entries are separated by commas (and may be padded with spaces):
/// - `*` alone: every host;
/// - a host name, with or without a leading `.` (or `*.`): that name and every name under it
///   (`example.com` and `.example.com` both match `example.com` and `a.example.com`, never
///   `badexample.com`); case-insensitive, trailing dots ignored;
/// - an IPv4 or IPv6 literal (IPv6 bare or in brackets): that address, compared as an address
///   (`::1` matches `0:0::1`), never a name that happens to resolve to it;
/// - either with a CIDR prefix (`10.0.0.0/8`, `fd00::/8`): every address in that network;
/// - any of these followed by `:port` (`host:8080`, `[::1]:8080`): only that port.
///
/// Malformed entries are ignored, as curl ignores them.
package struct ProxyBypass: Sendable, Hashable {
    package enum Pattern: Sendable, Hashable {
        case everything
        case domain(String, port: Int?)
        case network(IPAddress, prefix: Int, port: Int?)
    }

    package private(set) var patterns: [Pattern] = []

    package init() {}

    /// The entries of every list in `lists` (each may itself be comma-separated).
    package init(_ lists: [String]) {
        for list in lists {
            for entry in list.split(separator: ",") {
                if let pattern = ProxyBypass.pattern(entry) { patterns.append(pattern) }
            }
        }
    }

    /// Whether a request to `host` (a name, or an IP literal, IPv6 with or without brackets) on `port`
    /// goes direct.
    package func matches(host: String, port: Int) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        while name.hasSuffix(".") { name.removeLast() }
        let address = IPAddress(name)
        for pattern in patterns {
            switch pattern {
            case .everything:
                return true
            case .domain(let domain, let only):
                guard address == nil, only == nil || only == port else { continue }
                if name == domain || name.hasSuffix("." + domain) { return true }
            case .network(let network, let prefix, let only):
                guard let address, only == nil || only == port else { continue }
                if address.isIn(network, prefix: prefix) { return true }
            }
        }
        return false
    }

    /// One entry, or nil when it is empty or malformed.
    package static func pattern(_ raw: Substring) -> Pattern? {
        var entry = Substring(raw.trimmingSpaces().lowercased())
        guard !entry.isEmpty else { return nil }
        if entry == "*" { return .everything }
        var port: Int? = nil
        if entry.hasPrefix("[") {
            // [v6], [v6]:port, [v6/prefix]:port, [v6]/prefix
            guard let close = entry.firstIndex(of: "]") else { return nil }
            var rest = entry[entry.index(after: close)...]
            var inside = entry[entry.index(after: entry.startIndex)..<close]
            if rest.hasPrefix("/") {
                inside += rest.prefix { $0 != ":" }
                rest = rest.drop { $0 != ":" }
            }
            if rest.hasPrefix(":") {
                guard let number = parsePort(rest.dropFirst()) else { return nil }
                port = number
            } else if !rest.isEmpty {
                return nil
            }
            entry = inside
        } else if entry.filter({ $0 == ":" }).count == 1, let colon = entry.firstIndex(of: ":") {
            // host:port or v4:port (a bare IPv6 literal has at least two colons)
            guard let number = parsePort(entry[entry.index(after: colon)...]) else { return nil }
            port = number
            entry = entry[..<colon]
        }
        var text = entry
        var prefix: Int? = nil
        if let slash = text.firstIndex(of: "/") {
            guard let bits = Int(text[text.index(after: slash)...]) else { return nil }
            prefix = bits
            text = text[..<slash]
        }
        if let address = IPAddress(String(text)) {
            let length = address.bytes.count * 8
            let bits = prefix ?? length
            guard (0...length).contains(bits) else { return nil }
            return .network(address, prefix: bits, port: port)
        }
        guard prefix == nil else { return nil }
        if text.hasPrefix("*.") { text = text.dropFirst(2) }
        while text.hasPrefix(".") { text = text.dropFirst() }
        while text.hasSuffix(".") { text = text.dropLast() }
        guard !text.isEmpty, !text.contains("*"), !text.contains("/") else { return nil }
        return .domain(String(text), port: port)
    }

    private static func parsePort(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.allSatisfy(\.isASCII), let port = Int(text), (1...65535).contains(port)
        else { return nil }
        return port
    }
}

/// An IPv4 (4 bytes) or IPv6 (16 bytes) address parsed from its text form, without the system's
/// resolver (this is matching, not name resolution).
package struct IPAddress: Sendable, Hashable {
    package var bytes: [UInt8]

    /// Dotted-quad IPv4 (four decimal parts, 0–255, no leading zeros beyond "0"), or IPv6 in any RFC 4291
    /// text form, `::` compression and a trailing dotted quad included; a `%zone` suffix is ignored.
    package init?(_ text: String) {
        if let v4 = IPAddress.parseIPv4(Substring(text)) {
            bytes = v4
        } else if let v6 = IPAddress.parseIPv6(Substring(text)) {
            bytes = v6
        } else {
            return nil
        }
    }

    /// Whether the first `prefix` bits equal those of `network` (same family only).
    package func isIn(_ network: IPAddress, prefix: Int) -> Bool {
        guard bytes.count == network.bytes.count else { return false }
        var remaining = prefix
        for (mine, theirs) in zip(bytes, network.bytes) {
            guard remaining > 0 else { return true }
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if mine & mask != theirs & mask { return false }
            remaining -= 8
        }
        return true
    }

    package static func parseIPv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var result: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy({ $0.isASCII && $0.isNumber }),
                part == "0" || !part.hasPrefix("0"), let value = UInt8(part)
            else { return nil }
            result.append(value)
        }
        return result
    }

    package static func parseIPv6(_ raw: Substring) -> [UInt8]? {
        let text = raw.prefix { $0 != "%" }
        guard text.contains(":") else { return nil }
        func groups(_ part: Substring, allowIPv4Tail: Bool) -> [UInt16]? {
            guard !part.isEmpty else { return [] }
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            var result: [UInt16] = []
            for (index, piece) in pieces.enumerated() {
                if allowIPv4Tail, index == pieces.count - 1, piece.contains(".") {
                    guard let v4 = parseIPv4(piece) else { return nil }
                    result.append(UInt16(v4[0]) << 8 | UInt16(v4[1]))
                    result.append(UInt16(v4[2]) << 8 | UInt16(v4[3]))
                    continue
                }
                guard (1...4).contains(piece.count), piece.allSatisfy(\.isHexDigit),
                    let value = UInt16(piece, radix: 16)
                else { return nil }
                result.append(value)
            }
            return result
        }
        let halves = text.components(separatedBy: "::")
        var words: [UInt16]
        switch halves.count {
        case 1:
            guard let all = groups(text, allowIPv4Tail: true), all.count == 8 else { return nil }
            words = all
        case 2:
            guard let head = groups(Substring(halves[0]), allowIPv4Tail: false),
                let tail = groups(Substring(halves[1]), allowIPv4Tail: true),
                head.count + tail.count <= 7
            else { return nil }
            words = head + [UInt16](repeating: 0, count: 8 - head.count - tail.count) + tail
        default:
            return nil
        }
        return words.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }
}
