import Foundation

/// The request heads Fastpull sends.
enum Requests {
    /// `User-Agent: fastpull/<version>`.
    static let userAgent = "fastpull/\(fastpullVersion)"

    /// A request for `url` on a connection to `origin`, optionally for one byte range (inclusive), with
    /// `extraHeaders` appended after the standard fields (the probe's `Want-Repr-Digest`, for example).
    static func make(
        _ method: String, _ url: URL, origin: Origin, range: ClosedRange<Int64>? = nil,
        ifRange: String? = nil,
        extraHeaders: [(name: String, value: String)] = []
    ) -> RequestHead {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: origin.hostHeader)
        headers.add(name: "User-Agent", value: userAgent)
        headers.add(name: "Accept", value: "*/*")
        headers.add(name: "Accept-Encoding", value: "identity")
        if let range {
            headers.add(name: "Range", value: "bytes=\(range.lowerBound)-\(range.upperBound)")
            if let ifRange { headers.add(name: "If-Range", value: ifRange) }
        }
        for field in extraHeaders {
            headers.add(name: field.name, value: field.value)
        }
        return RequestHead(method: method, target: url.requestTarget, headers: headers)
    }
}
