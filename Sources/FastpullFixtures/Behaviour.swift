/// What a request's query string asks the fixture server to do (see the table in ``FixtureServer``).
///
/// Unknown parameters are ignored (clients may add their own); a known parameter with a bad value is an
/// error, answered with 400, so that a typo in a test does not silently test something else.
struct Behaviour: Sendable, Equatable {
    struct Invalid: Error, Equatable, CustomStringConvertible {
        var description: String
    }

    /// `seed=N`: the content seed of `/gen`.
    var seed: UInt64 = 1
    /// `rate=BPS`: per-connection limit on body bytes per second.
    var rate: Int?
    /// `slow-every=K`: every K-th accepted connection uses `slowRate` instead of `rate`.
    var slowEvery: Int?
    /// `slow-rate=BPS`.
    var slowRate: Int?
    /// `ttfb=MS`: delay before each response head.
    var ttfbMilliseconds = 0
    /// `drop-after=N`: close the connection after N body bytes…
    var dropAfter: Int64?
    /// `drops=K`: …for the first K such responses of this key.
    var drops = 1
    /// `stall-after=N`: stop sending after N body bytes, keeping the connection open…
    var stallAfter: Int64?
    /// `stalls=K`: …for the first K such responses of this key.
    var stalls = 1
    /// `no-ranges=1`.
    var noRanges = false
    /// `chunked=1`.
    var chunked = false
    /// `bad-range=1`.
    var badRange = false
    /// `status=CODE`.
    var status: Int?
    /// `link=ENC`: a `Link` field on every answer for the resource (RFC 6249 mirrors:
    /// `<http://…>; rel=duplicate`).
    var link: String?
    /// `content-type=ENC`: the answer's `Content-Type` instead of `application/octet-stream`.
    var contentType: String?
    /// `disposition=ENC`: a `Content-Disposition` field (`attachment; filename="a.bin"`).
    var disposition: String?
    /// `statuses=K`: only the first K requests of this key get `status` (nil: all of them).
    var statuses: Int?
    /// `status-ranged=1`: only requests with a `Range` field get `status` (a HEAD or a whole GET is
    /// answered as usual), as a server that limits connections refuses the later, parallel ones.
    var statusOnlyForRanges = false
    /// `retry-after=S`: a `Retry-After` value sent with `status`.
    var retryAfter: String?
    /// `head=CODE`: the status for HEAD requests (GET is unaffected).
    var headStatus: Int?
    /// `corrupt=OFFSET`: flip the content byte at this offset in every body that includes it.
    var corruptOffset: Int64?
    /// `close=1`.
    var close = false
    /// `quiet-close=1`: close the connection after each answer without saying so (no `Connection:
    /// close`), as a server that takes one request per connection and ignores any sent after it.
    var quietClose = false
    /// `code=301|302|303|307|308`: the status of redirects.
    var redirectCode = 302
    /// `url=ENC`: the Location of `/redirect-to`.
    var redirectURL: String?
    /// `if-range=ignore`: answer ranges whatever `If-Range` says, as some servers do (h2o 2.2, Python's
    /// `RangeHTTPServer`): a stale request then gets a 206 of the current version.
    var ignoresIfRange = false
    /// `alternate=1` (`/gen` only): every second GET of this key serves the next seed's content, with
    /// that version's ETag, as a server flapping between two versions (two backends) would.
    var alternates = false
    /// `validators=weak|changed-without-etag` (`/gen` only): the ETag is weak (`W/"…"`) and no
    /// `Last-Modified` is sent; or the other version of `alternate=1` sends no ETag at all (only its
    /// own `Last-Modified`), as servers whose new version leaves the tag out.
    var validators: Validators = .strong
    /// `head-length=N`: HEAD answers announce N bytes, whatever the GETs send (dynamic servers that
    /// answer HEAD with a length of 0).
    var headLength: Int64?

    /// Which validators `/gen` sends.
    package enum Validators: String, Sendable {
        case strong
        case weak
        case changedWithoutETag = "changed-without-etag"
    }
    /// `multipart=1`: a 206 is framed as `multipart/byteranges` (one part), with a matching
    /// `Content-Range` on the response as well, and no length: it ends when the connection closes.
    var multipart = false
    /// `largest-answer=N`: no 206 to an open-ended range (`bytes=a-`) carries more than N bytes (a
    /// server, or a CDN, that caps what it sends of one; the client asks for the rest).
    var largestAnswer: Int64?
    /// `pipeline-cut=N`: an answer during which the connection's next request arrived stops N bytes
    /// short of its length (at once when fewer are left), and the next answer follows straight on, as
    /// servers and middleboxes that abort an answer when a pipelined request arrives do.
    var pipelineCut: Int64?
    /// `pipeline-long=N`: an answer during which the connection's next request arrived runs N bytes
    /// past its length (the content that follows it), and the next answer follows.
    var pipelineLong: Int64?
    /// `whole-from=OFFSET`: a range that starts at or after OFFSET is answered 200 with the whole
    /// file (same version, same validators), as a server that stops honouring ranges part-way through
    /// a download would (a backend behind a balancer without them, Apache's rule for a file modified
    /// within the last minute).
    var wholeFrom: Int64?
    /// `set-cookie=VALUE`: a redirect (`/redirect-to`) carries `Set-Cookie: VALUE`.
    var setCookie: String?
    /// `cookie=NAME=VALUE`: a resource is answered 403 unless the request's `Cookie` holds that pair.
    var needsCookie: String?

    init() {}

    /// Parses a query string such as `seed=2&rate=1000`. Names and values are percent-decoded
    /// (`+` stays a plus sign); a name without `=` has the empty value.
    init(query: Substring) throws(Invalid) {
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let name: String
            let value: String
            if let equals = pair.firstIndex(of: "=") {
                name = Self.percentDecoded(pair[..<equals])
                value = Self.percentDecoded(pair[pair.index(after: equals)...])
            } else {
                name = Self.percentDecoded(pair)
                value = ""
            }
            try apply(name: name, value: value)
        }
        if slowEvery != nil && slowRate == nil { throw Invalid(description: "slow-every needs slow-rate") }
    }

    /// The rate limit for a connection that was the `connectionIndex`-th accepted (1-based).
    func rate(forConnection connectionIndex: Int) -> Int? {
        if let slowEvery, let slowRate, connectionIndex % slowEvery == 0 { return slowRate }
        return rate
    }

    private mutating func apply(name: String, value: String) throws(Invalid) {
        switch name {
        case "seed":
            guard let parsed = UInt64(value) else { throw invalid(name, value) }
            seed = parsed
        case "rate": rate = try integer(name, value, in: 1...Int.max)
        case "slow-every": slowEvery = try integer(name, value, in: 1...Int.max)
        case "slow-rate": slowRate = try integer(name, value, in: 1...Int.max)
        case "ttfb": ttfbMilliseconds = try integer(name, value, in: 0...86_400_000)
        case "drop-after": dropAfter = Int64(try integer(name, value, in: 0...Int.max))
        case "drops": drops = try integer(name, value, in: 0...Int.max)
        case "stall-after": stallAfter = Int64(try integer(name, value, in: 0...Int.max))
        case "stalls": stalls = try integer(name, value, in: 0...Int.max)
        case "no-ranges": noRanges = try flag(name, value)
        case "chunked": chunked = try flag(name, value)
        case "bad-range": badRange = try flag(name, value)
        case "status": status = try integer(name, value, in: 200...599)
        case "statuses": statuses = try integer(name, value, in: 0...Int.max)
        case "status-ranged": statusOnlyForRanges = try flag(name, value)
        case "retry-after":
            guard !value.isEmpty,
                !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
            else { throw invalid(name, value) }
            retryAfter = value
        case "head": headStatus = try integer(name, value, in: 200...599)
        case "corrupt": corruptOffset = Int64(try integer(name, value, in: 0...Int.max))
        case "close": close = try flag(name, value)
        case "quiet-close": quietClose = try flag(name, value)
        case "code":
            let code = try integer(name, value, in: 301...308)
            guard [301, 302, 303, 307, 308].contains(code) else { throw invalid(name, value) }
            redirectCode = code
        case "if-range":
            guard value == "ignore" || value == "honour" else { throw invalid(name, value) }
            ignoresIfRange = value == "ignore"
        case "alternate": alternates = try flag(name, value)
        case "head-length": headLength = Int64(try integer(name, value, in: 0...Int.max))
        case "validators":
            guard let kind = Validators(rawValue: value) else { throw invalid(name, value) }
            validators = kind
        case "multipart": multipart = try flag(name, value)
        case "largest-answer": largestAnswer = Int64(try integer(name, value, in: 1...Int.max))
        case "pipeline-cut": pipelineCut = Int64(try integer(name, value, in: 1...Int.max))
        case "pipeline-long": pipelineLong = Int64(try integer(name, value, in: 1...Int.max))
        case "whole-from": wholeFrom = Int64(try integer(name, value, in: 0...Int.max))
        case "link", "content-type", "disposition":
            guard !value.isEmpty, !value.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
                throw invalid(name, value)
            }
            switch name {
            case "link": link = value
            case "content-type": contentType = value
            default: disposition = value
            }
        case "set-cookie", "cookie":
            guard !value.isEmpty, !value.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
                throw invalid(name, value)
            }
            if name == "cookie" { needsCookie = value } else { setCookie = value }
        case "url":
            guard !value.isEmpty, !value.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
                throw invalid(name, value)
            }
            redirectURL = value
        default:
            break
        }
    }

    private func invalid(_ name: String, _ value: String) -> Invalid {
        Invalid(description: "bad value for query parameter \(name): \"\(value)\"")
    }

    private func integer(_ name: String, _ value: String, in range: ClosedRange<Int>) throws(Invalid) -> Int {
        guard value.allSatisfy(\.isASCII), let parsed = Int(value), range.contains(parsed) else {
            throw invalid(name, value)
        }
        return parsed
    }

    private func flag(_ name: String, _ value: String) throws(Invalid) -> Bool {
        switch value {
        case "1", "true", "": return true
        case "0", "false": return false
        default: throw invalid(name, value)
        }
    }

    /// Decodes `%XX` escapes; malformed escapes are kept as they are.
    static func percentDecoded(_ text: Substring) -> String {
        guard text.contains("%") else { return String(text) }
        var bytes: [UInt8] = []
        let utf8 = Array(text.utf8)
        var index = 0
        while index < utf8.count {
            if utf8[index] == UInt8(ascii: "%"), index + 2 < utf8.count,
                let high = hexValue(utf8[index + 1]), let low = hexValue(utf8[index + 2])
            {
                bytes.append(high << 4 | low)
                index += 3
            } else {
                bytes.append(utf8[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
