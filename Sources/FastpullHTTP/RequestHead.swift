import FastpullNet
import FoundationEssentials

/// The request line and header fields of an HTTP/1.1 request.
package struct RequestHead: Sendable {
    package var method: String
    /// The request target in origin-form: absolute path and query, e.g. `/files/a.iso?sig=x`.
    package var target: String
    package var headers: HTTPHeaders

    /// `"GET /x HTTP/1.1\r\n"`, then `name: value\r\n` for each header in order, then `"\r\n"`.
    ///
    /// CR, LF and NUL bytes anywhere (which would let a value inject fields or split the request) are
    /// written as SP, as RFC 9110 §5.5 allows; callers should reject such input earlier
    /// (`HTTPHeaders.isToken`, `HTTPHeaders.isValidFieldValue`).
    package func serialized() -> [UInt8] {
        var size = method.utf8.count + target.utf8.count + 12
        for field in headers {
            size += field.name.utf8.count + field.value.utf8.count + 4
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size + 2)
        Self.append(method, to: &bytes)
        bytes.append(UInt8(ascii: " "))
        Self.append(target, to: &bytes)
        bytes.append(contentsOf: " HTTP/1.1\r\n".utf8)
        for field in headers {
            Self.append(field.name, to: &bytes)
            bytes.append(UInt8(ascii: ":"))
            bytes.append(UInt8(ascii: " "))
            Self.append(field.value, to: &bytes)
            bytes.append(UInt8(ascii: "\r"))
            bytes.append(UInt8(ascii: "\n"))
        }
        bytes.append(UInt8(ascii: "\r"))
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    private static func append(_ text: String, to bytes: inout [UInt8]) {
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\r"), UInt8(ascii: "\n"), 0:
                bytes.append(UInt8(ascii: " "))
            default:
                bytes.append(byte)
            }
        }
    }

    /// The origin-form request target of `url`: its percent-encoded path (`/` when empty) and query,
    /// without the fragment.
    package static func target(for url: URL) -> String {
        let path = url.path(percentEncoded: true)
        var target = path.isEmpty ? "/" : path
        if let query = url.query(percentEncoded: true) {
            target += "?" + query
        }
        return target
    }

    /// The `Host` field value for `url`: the host (IPv6 literals in brackets) and the port when it is
    /// not the scheme's default; nil when the URL has no host.
    package static func hostField(for url: URL) -> String? {
        guard let host = url.host(percentEncoded: true), !host.isEmpty else { return nil }
        let bracketed = host.contains(":") ? "[\(host)]" : host
        let defaultPort = url.scheme?.lowercased() == "https" ? 443 : 80
        guard let port = url.port, port != defaultPort else { return bracketed }
        return "\(bracketed):\(port)"
    }
}
