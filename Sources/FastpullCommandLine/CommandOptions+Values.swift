import Fastpull
import FastpullHTTP
import FoundationEssentials
import Glibc

/// How one option value is read: each names its option and the bad value when it fails.
extension CommandOptions {
    /// `Name: value` as `-H` takes it.
    static func header(_ text: String) throws(UsageError) -> Header {
        guard let colon = text.firstIndex(of: ":") else {
            throw UsageError(option: "header", "expected 'Name: value'", got: text)
        }
        let name = String(text[..<colon])
        let tokenCharacters = Set("!#$%&'*+-.^_`|~".utf8)
        guard !name.isEmpty,
            name.utf8.allSatisfy({ byte in
                let lower = byte | 0x20
                return (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                    || (lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z"))
                    || tokenCharacters.contains(byte)
            })
        else {
            throw UsageError(option: "header", "expected a field name of letters, digits and -", got: text)
        }
        let value = text[text.index(after: colon)...].trimmingSpaces()
        guard !value.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
            throw UsageError(option: "header", "a value cannot hold line breaks", got: text)
        }
        return Header(name: name, value: value)
    }

    /// Checks a `--proxy` value: `http://host:port`, `socks5://host:port`, `socks5h://host:port`, or
    /// `host:port` (taken as http).
    static func proxyURL(_ text: String) throws(UsageError) -> URL {
        if ProxySetting.isSOCKS(text) {
            do {
                try ProxySetting.check(text, source: "--proxy")
            } catch {
                throw UsageError(message: "error: \(error.message)")
            }
        }
        let full = text.contains("://") ? text : "http://" + text
        guard let url = URL(string: full), ["http", "socks5", "socks5h"].contains(url.scheme?.lowercased()),
            let host = url.host(), !host.isEmpty
        else {
            throw UsageError(
                option: "proxy",
                "expected a proxy URL like http://proxy:3128 or socks5h://proxy:1080", got: text)
        }
        return url
    }

    static func integer(_ text: String, option: String, in range: ClosedRange<Int>) throws(UsageError)
        -> Int
    {
        guard let value = Int(text), range.contains(value) else {
            throw UsageError(
                option: option, "expected a number from \(range.lowerBound) to \(range.upperBound)", got: text
            )
        }
        return value
    }

    /// `HOST:PORT:ADDRESS[,ADDRESS…]` (`--resolve`, as curl spells it; an IPv6 address may be in
    /// brackets).
    static func addressPin(_ text: String) throws(UsageError) -> Configuration.AddressPin {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, let port = Int(parts[1]), (1...65535).contains(port) else {
            throw UsageError(option: "resolve", "expected HOST:PORT:ADDRESS[,ADDRESS]", got: text)
        }
        let addresses = parts[2].split(separator: ",").map {
            $0.hasPrefix("[") && $0.hasSuffix("]") ? String($0.dropFirst().dropLast()) : String($0)
        }
        guard !addresses.isEmpty, addresses.allSatisfy(Self.isIPLiteral) else {
            throw UsageError(option: "resolve", "expected IP addresses after HOST:PORT:", got: text)
        }
        return Configuration.AddressPin(host: String(parts[0]), port: port, addresses: addresses)
    }

    /// Whether `text` is an IPv4 or IPv6 address.
    static func isIPLiteral(_ text: String) -> Bool {
        var buffer = in6_addr()
        return inet_pton(AF_INET, text, &buffer) == 1 || inet_pton(AF_INET6, text, &buffer) == 1
    }

    static func seconds(_ text: String, option: String) throws(UsageError) -> Duration {
        guard let value = Double(text), value > 0, value.isFinite, value < 1e9 else {
            throw UsageError(option: option, "expected a number of seconds above 0", got: text)
        }
        return .milliseconds(Int64(value * 1000))
    }

    /// `START-END`, `START-` or `-N` (`--range`, as curl's `-r` takes one range).
    static func byteRange(_ text: String) throws(UsageError) -> ByteRange {
        let expected = "expected START-END, START- or -N in bytes from 0, like 0-1023"
        if text.contains(",") {
            throw UsageError(option: "range", "takes one range (\(expected))", got: text)
        }
        let parts = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        func number(_ part: Substring) -> Int64? {
            part.allSatisfy { $0.isASCII && $0.isNumber } ? Int64(part) : nil
        }
        guard parts.count == 2 else { throw UsageError(option: "range", expected, got: text) }
        if parts[0].isEmpty {
            guard let count = number(parts[1]), count > 0 else {
                throw UsageError(option: "range", expected, got: text)
            }
            return .last(count)
        }
        guard let start = number(parts[0]) else { throw UsageError(option: "range", expected, got: text) }
        if parts[1].isEmpty { return .from(start) }
        guard let end = number(parts[1]) else { throw UsageError(option: "range", expected, got: text) }
        guard end >= start else {
            throw UsageError(option: "range", "the end comes before the start (\(expected))", got: text)
        }
        return .from(start, through: end)
    }
}
