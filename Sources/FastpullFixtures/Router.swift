#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Decides the response to a request: resources (`/gen`, `/files`), redirects, and the faults its query
/// asks for. It does no socket I/O; the only state it touches is the server's per-key fault counters
/// (and it opens files).
struct Router {
    let core: ServerCore

    /// The response for `request`, which arrived on the `connectionIndex`-th accepted connection.
    func response(for request: RequestHead, connectionIndex: Int) -> Response {
        guard request.method == "GET" || request.method == "HEAD" else {
            return .text(
                405, "method \(request.method) is not supported\n", headers: [("Allow", "GET, HEAD")])
        }
        if let required = core.authorization, request.header("Authorization") != required {
            return .text(
                401, "credentials required\n", headers: [("WWW-Authenticate", "Basic realm=\"fixture\"")])
        }
        let behaviour: Behaviour
        do {
            behaviour = try Behaviour(query: request.query)
        } catch {
            return .text(400, "\(error.description)\n")
        }
        var response = route(request, behaviour: behaviour, connectionIndex: connectionIndex)
        response.ttfbNanoseconds = Int64(behaviour.ttfbMilliseconds) * 1_000_000
        response.close = response.close || behaviour.close
        response.quietClose = behaviour.quietClose
        return response
    }

    private func route(_ request: RequestHead, behaviour: Behaviour, connectionIndex: Int) -> Response {
        let path = request.path
        let components = path.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let query = request.query
        let querySuffix = query.isEmpty ? "" : "?\(query)"
        let first = components.count > 1 ? components[1].prefix(while: { $0 != "/" }) : ""
        switch first {
        case "gen":
            guard let size = Self.size(path.dropFirst("/gen/".count)), path.hasPrefix("/gen/") else {
                return .text(404, "no such size: \(path)\n")
            }
            var seed = behaviour.seed
            if behaviour.alternates, request.method == "GET",
                core.next(.version, key: request.target) % 2 == 1
            {
                seed &+= 1
            }
            let strong = "\"gen-\(size)-\(seed)\""
            let modified =
                seed == behaviour.seed
                ? HTTPDate.generatedContent
                : HTTPDate.format(secondsSinceEpoch: 1_600_000_000 + Int(seed % 1000))
            let (etag, lastModified): (String?, String?) =
                switch behaviour.validators {
                case .strong: (strong, modified)
                case .weak: ("W/" + strong, nil)
                case .changedWithoutETag: (seed == behaviour.seed ? strong : nil, modified)
                }
            return content(
                request, behaviour: behaviour, connectionIndex: connectionIndex, size: size,
                source: .generated(seed: seed), etag: etag, lastModified: lastModified)
        case "files":
            return file(request, behaviour: behaviour, connectionIndex: connectionIndex)
        case "redirect":
            // /redirect/<n>/<rest>
            let parts = path.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
            guard parts.count == 4 || parts.count == 3, let hops = Int(parts[2]), hops >= 0 else {
                return .text(404, "expected /redirect/<n>/<path>\n")
            }
            let rest = parts.count == 4 ? parts[3] : ""
            let location =
                hops == 0 ? "/\(rest)\(querySuffix)" : "/redirect/\(hops - 1)/\(rest)\(querySuffix)"
            return redirect(to: location, code: behaviour.redirectCode)
        case "redirect-loop" where path == "/redirect-loop":
            return redirect(to: request.target, code: behaviour.redirectCode)
        case "redirect-to" where path == "/redirect-to":
            guard let url = behaviour.redirectURL else { return .text(400, "redirect-to needs url=\n") }
            var answer = redirect(to: url, code: behaviour.redirectCode)
            if let cookie = behaviour.setCookie { answer.headers.append((name: "Set-Cookie", value: cookie)) }
            return answer
        default:
            return .text(404, "not found: \(path)\n")
        }
    }

    private func redirect(to location: String, code: Int) -> Response {
        .text(code, "redirecting to \(location)\n", headers: [("Location", location)])
    }

    private func file(_ request: RequestHead, behaviour: Behaviour, connectionIndex: Int) -> Response {
        let name = Behaviour.percentDecoded(request.path.dropFirst("/files/".count))
        guard let directory = core.filesDirectory, request.path.hasPrefix("/files/"), !name.isEmpty,
            name != ".", name != "..", !name.contains("/"), !name.contains("\0")
        else {
            return .text(404, "no such file: \(request.path)\n")
        }
        let descriptor = open(directory + "/" + name, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return .text(404, "no such file: \(name)\n") }
        let file = OpenFile(descriptor: descriptor)
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            return .text(404, "not a regular file: \(name)\n")
        }
        #if canImport(Glibc)
            let modified = info.st_mtim
        #else
            let modified = info.st_mtimespec
        #endif
        let size = Int64(info.st_size)
        return content(
            request, behaviour: behaviour, connectionIndex: connectionIndex, size: size, source: .file(file),
            etag: "\"file-\(size)-\(modified.tv_sec)-\(modified.tv_nsec)\"",
            lastModified: HTTPDate.format(secondsSinceEpoch: Int(modified.tv_sec)))
    }

    /// A resource response: injected statuses, HEAD overrides, ranges, framing and body faults.
    private func content(
        _ request: RequestHead, behaviour: Behaviour, connectionIndex: Int, size: Int64,
        source: ContentSource, etag: String?, lastModified: String?
    ) -> Response {
        let key = request.target
        let isHead = request.method == "HEAD"
        if let needed = behaviour.needsCookie {
            let sent = (request.header("Cookie") ?? "").split(separator: ";").map {
                String($0.drop { $0 == " " || $0 == "\t" })
            }
            guard sent.contains(needed) else { return .text(403, "403 Forbidden: no cookie \(needed)\n") }
        }
        if let status = behaviour.status, !behaviour.statusOnlyForRanges || request.header("Range") != nil,
            core.take(.status, key: key, limit: behaviour.statuses)
        {
            let headers = behaviour.retryAfter.map { [(name: "Retry-After", value: $0)] } ?? []
            return .text(
                status, "\(status) \(Response.reason(status)) (injected by status=)\n", headers: headers)
        }
        if isHead, let headStatus = behaviour.headStatus {
            return Response(status: headStatus, headers: headStatus == 405 ? [("Allow", "GET")] : [])
        }

        var range = behaviour.noRanges ? .whole : RangeRequest(header: request.header("Range"), size: size)
        if case .partial(let requested) = range, let from = behaviour.wholeFrom, requested.lowerBound >= from
        {
            range = .whole
        }
        if case .partial = range, !behaviour.ignoresIfRange, let validator = request.header("If-Range"),
            validator != etag && validator != lastModified
        {
            range = .whole
        }
        let multipart: Bool
        if case .partial = range, behaviour.multipart { multipart = true } else { multipart = false }
        let boundary = "fastpull-fixture-boundary"
        var headers: [(name: String, value: String)] = [
            (
                "Content-Type",
                multipart
                    ? "multipart/byteranges; boundary=\(boundary)"
                    : behaviour.contentType ?? "application/octet-stream"
            )
        ]
        if let link = behaviour.link { headers.append(("Link", link)) }
        if let disposition = behaviour.disposition { headers.append(("Content-Disposition", disposition)) }
        if !behaviour.noRanges { headers.append(("Accept-Ranges", "bytes")) }
        if let etag { headers.append(("ETag", etag)) }
        if let lastModified { headers.append(("Last-Modified", lastModified)) }

        let status: Int
        let body: Range<Int64>
        switch range {
        case .unsatisfiable:
            return .text(
                416, "range not satisfiable\n", headers: headers + [("Content-Range", "bytes */\(size)")])
        case .whole:
            status = 200
            body = 0..<size
        case .partial(let requested):
            status = 206
            var sent: Range<Int64> =
                behaviour.badRange
                ? Self.shifted(requested, size: size) : requested.lowerBound..<(requested.upperBound + 1)
            if let largest = behaviour.largestAnswer, Int64(sent.count) > largest,
                request.header("Range")?.hasSuffix("-") == true
            {
                sent = sent.lowerBound..<(sent.lowerBound + largest)
            }
            body = sent
            headers.append(("Content-Range", "bytes \(body.lowerBound)-\(body.upperBound - 1)/\(size)"))
        }
        var framing: (prefix: [UInt8], suffix: [UInt8])?
        if multipart {
            let part =
                "--\(boundary)\r\nContent-Type: application/octet-stream\r\n"
                + "Content-Range: bytes \(body.lowerBound)-\(body.upperBound - 1)/\(size)\r\n\r\n"
            framing = (Array(part.utf8), Array("\r\n--\(boundary)--\r\n".utf8))
        }
        if behaviour.chunked {
            headers.append(("Transfer-Encoding", "chunked"))
        } else if framing == nil {
            let length = isHead ? behaviour.headLength ?? Int64(body.count) : Int64(body.count)
            headers.append(("Content-Length", "\(length)"))
        }

        var response = Response(
            status: status, headers: headers, body: isHead ? .empty : .content(source, range: body))
        response.framing = framing
        // The multipart answer has no length of its own: it ends when the connection closes.
        if framing != nil { response.close = true }
        response.chunked = behaviour.chunked
        response.corruptOffset = behaviour.corruptOffset
        if let cut = behaviour.pipelineCut {
            response.pipelineFault = .cut(cut)
        } else if let long = behaviour.pipelineLong {
            response.pipelineFault = .long(long)
        }
        response.rate = behaviour.rate(forConnection: connectionIndex)
        if !isHead {
            let length = Int64(body.count)
            if let after = behaviour.dropAfter, after < length,
                core.take(.drop, key: key, limit: behaviour.drops)
            {
                response.cut = .drop(after: after)
            } else if let after = behaviour.stallAfter, after < length,
                core.take(.stall, key: key, limit: behaviour.stalls)
            {
                response.cut = .stall(after: after)
            }
        }
        return response
    }

    /// `bad-range=1`: the requested range with its start moved one byte later (the end stays, unless
    /// that would leave nothing, then it moves too; at the very end of the resource the start moves one
    /// byte earlier instead).
    static func shifted(_ range: ClosedRange<Int64>, size: Int64) -> Range<Int64> {
        let first = range.lowerBound + 1
        if first <= range.upperBound { return first..<(range.upperBound + 1) }
        if first < size { return first..<(first + 1) }
        let earlier = max(0, range.lowerBound - 1)
        return earlier..<(earlier + 1)
    }

    /// Parses `<digits>[K|M|G]` (binary multiples).
    static func size(_ text: Substring) -> Int64? {
        var digits = text
        var multiplier: Int64 = 1
        switch text.last {
        case "K", "k": multiplier = 1 << 10
        case "M", "m": multiplier = 1 << 20
        case "G", "g": multiplier = 1 << 30
        default: break
        }
        if multiplier != 1 { digits = text.dropLast() }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let value = Int64(digits)
        else { return nil }
        let (product, overflow) = value.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : product
    }
}
