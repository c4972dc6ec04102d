import FastpullHTTP
import FoundationEssentials

/// The `Link` fields of a response (RFC 8288) that RFC 6249 gives meaning to: `rel=duplicate`, other
/// URLs of the same file (with their `pri`ority), and `rel=describedby` of the Metalink media type, a
/// Metalink document of the file.
package struct LinkHeader: Sendable, Equatable {
    /// One link: its target and parameters (names lowercased, values unquoted).
    struct Link: Sendable, Equatable {
        var target: String
        var parameters: [String: String]

        /// Whether `rel` holds `relation` (it is a space-separated list).
        func has(relation: String) -> Bool {
            (parameters["rel"] ?? "").lowercased().split(separator: " ").contains { $0 == relation }
        }
    }

    var links: [Link]

    /// Parses every value of the `Link` fields; malformed links are skipped.
    init(values: [String]) {
        links = values.flatMap(Self.parse)
    }

    /// `rel=duplicate` targets as absolute http(s) URLs against `base`, by `pri` (lowest first; none
    /// after all that have one), in field order otherwise.
    func duplicates(base: URL) -> [URL] {
        let found = links.enumerated().compactMap { offset, link -> (URL, Int, Int)? in
            guard link.has(relation: "duplicate"), let url = Self.resolve(link.target, base: base) else {
                return nil
            }
            return (url, link.parameters["pri"].flatMap { Int($0) } ?? Int.max, offset)
        }
        return found.sorted { $0.1 != $1.1 ? $0.1 < $1.1 : $0.2 < $1.2 }.map(\.0)
    }

    /// The target of a `rel=describedby` link of the Metalink 4 media type, against `base`.
    func metalink(base: URL) -> URL? {
        links.first { $0.has(relation: "describedby") && Metalink.isMediaType($0.parameters["type"]) }
            .flatMap { Self.resolve($0.target, base: base) }
    }

    private static func resolve(_ target: String, base: URL) -> URL? {
        guard let url = URL(string: target, relativeTo: base)?.absoluteURL,
            let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host() != nil
        else { return nil }
        return url
    }

    /// `<a>; rel=duplicate; pri=1, <b>; rel="duplicate"`: links separated by commas outside `<…>` and
    /// quotes.
    static func parse(_ value: String) -> [Link] {
        var links: [Link] = []
        var rest = Substring(value)
        while let open = rest.firstIndex(of: "<") {
            guard let close = rest[open...].firstIndex(of: ">") else { break }
            let target = String(rest[rest.index(after: open)..<close])
            rest = rest[rest.index(after: close)...]
            var parameters: [String: String] = [:]
            // Parameters run to the next comma outside quotes.
            var end = rest.endIndex
            var quoted = false
            for index in rest.indices {
                let character = rest[index]
                if character == "\"" { quoted.toggle() }
                if character == ",", !quoted {
                    end = index
                    break
                }
            }
            for part in rest[..<end].split(separator: ";") {
                let pair = part.split(separator: "=", maxSplits: 1)
                guard let name = pair.first?.trimmingSpaces(), !name.isEmpty else {
                    continue
                }
                var text = pair.count > 1 ? pair[1].trimmingSpaces() : ""
                if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 {
                    text = String(text.dropFirst().dropLast())
                }
                parameters[name.lowercased()] = text
            }
            links.append(Link(target: target, parameters: parameters))
            rest = end < rest.endIndex ? rest[rest.index(after: end)...] : rest[rest.endIndex...]
        }
        return links
    }
}
