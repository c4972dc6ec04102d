import FastpullNet
import FoundationEssentials

/// A request head and the response head that answered it, as `--verbose` shows them: one line per
/// field, with credentials (`Authorization`, `Cookie`, `Proxy-Authorization`, `Set-Cookie`) and the
/// secret parameters of the target (signatures, tokens) replaced by `REDACTED`.
package enum ExchangeLog {
    /// Fields whose values are never shown.
    package static let secretFields = RequestSettings.sensitiveNames + ["Set-Cookie"]

    package static func lines(request: RequestHead) -> [String] {
        ["\(request.method) \(redactedTarget(request.target)) HTTP/1.1"]
            + request.headers.map { "\($0.name): \(shown($0.name, $0.value))" }
    }

    package static func lines(response: ResponseHead) -> [String] {
        ["HTTP/\(response.versionMajor).\(response.versionMinor) \(response.status) \(response.reason)"]
            + response.headers.map { "\($0.name): \(shown($0.name, $0.value))" }
    }

    private static func shown(_ name: String, _ value: String) -> String {
        secretFields.contains { HTTPHeaders.namesEqual($0, name) } ? "REDACTED" : value
    }

    /// The target (origin-form, or absolute-form through a proxy) with its secret parameters redacted.
    package static func redactedTarget(_ target: String) -> String {
        let absolute = target.hasPrefix("/") ? "http://host" + target : target
        guard let url = URL(string: absolute) else { return target }
        let redacted = url.redactedForDisplay
        return target.hasPrefix("/") ? String(redacted.dropFirst("http://host".count)) : redacted
    }
}
