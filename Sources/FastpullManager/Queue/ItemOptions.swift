import Fastpull
import FoundationEssentials

/// aria2's per-download options that the manager applies, turned into a `Configuration`: `checksum`
/// (`sha-256=HEX`, also `sha-1`, `sha-512`, `md5`), `header` (one `Name: value` per line, or an array
/// in the call), `http-user` and `http-passwd`, `user-agent`, `referer`, `max-download-limit`
/// (`500K`, `2M`, bytes; 0 for none), `remote-time` (the server's time on the file), and the
/// connection ceilings `split` (connections in all) and
/// `max-connection-per-server` (to one server): fastpull still chooses how many connections pay, up
/// to those. `min-split-size` is left to fastpull's segment sizes; the rest are kept and left alone. An option whose value is malformed is refused, so a download is
/// never added without the check it asked for.
enum ItemOptions {
    static func configuration(_ options: [String: String]) throws(FastpullError) -> Configuration {
        var configuration = Configuration()
        if let checksum = options["checksum"] {
            // aria2 names SHA-2 with a hyphen: sha-256.
            let text = checksum.lowercased().hasPrefix("sha-") ? "sha" + checksum.dropFirst(4) : checksum
            configuration.integrity.checksums = [try Checksum(parsing: text)]
        }
        for line in (options["header"] ?? "").split(separator: "\n") where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else {
                throw FastpullError(.usage, "header: expected 'Name: value', got '\(line)'")
            }
            let value = line[line.index(after: colon)...].drop { $0 == " " }
            configuration.request.headers.append(Header(name: String(line[..<colon]), value: String(value)))
        }
        if let referer = options["referer"], !referer.isEmpty {
            configuration.request.headers.append(Header(name: "Referer", value: referer))
        }
        if let user = options["http-user"] {
            configuration.request.credentials = Credentials(
                user: user, password: options["http-passwd"] ?? "")
        }
        if let agent = options["user-agent"] { configuration.request.userAgent = agent }
        configuration.resume.keepsServerTime = options["remote-time"] == "true"
        for (option, path) in [
            ("split", \Configuration.connections.maximum),
            ("max-connection-per-server", \Configuration.connections.maximumPerHost),
        ] {
            guard let text = options[option] else { continue }
            guard let count = Int(text), (1...1024).contains(count) else {
                throw FastpullError(
                    .usage, "\(option): expected a number of connections from 1 to 1024, got '\(text)'")
            }
            configuration[keyPath: path] = count
        }
        if let limit = options["max-download-limit"] {
            let rate = try bytes(limit, option: "max-download-limit")
            configuration.connections.maximumBytesPerSecond = rate > 0 ? rate : nil
        }
        return configuration
    }

    /// aria2's sizes: a number of bytes, with `K` or `M` for binary thousands and millions.
    static func bytes(_ text: String, option: String) throws(FastpullError) -> Int64 {
        let unit = text.last.map { $0.uppercased() }
        let multiplier: Int64 = unit == "K" ? 1 << 10 : unit == "M" ? 1 << 20 : 1
        let digits = multiplier == 1 ? Substring(text) : text.dropLast()
        guard let number = Int64(digits), number >= 0,
            case (let bytes, let overflow) = number.multipliedReportingOverflow(by: multiplier), !overflow
        else {
            throw FastpullError(
                .usage, "\(option): expected a number of bytes such as 500K or 2M, got '\(text)'")
        }
        return bytes
    }
}
