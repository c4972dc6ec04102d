// libFuzzer target: ServerDigests, StructuredFieldDictionary, Base64 and Checksum(parsing:).
//
// Input: a response head as text (`HTTP/1.1 200 OK`, then `name: value` lines), split leniently so that
// values the real head parser would reject still reach the digest code. A line that starts with a
// control byte names one of the digest fields by that byte, the rest of the line being its value, so
// the fuzzer finds the interesting names without spelling them. Every trusted digest must have its
// algorithm's length, statuses must gate what is trusted, and base64 must round-trip.

private let digestFieldNames = [
    "Repr-Digest", "Content-Digest", "Digest", "Content-MD5", "x-goog-hash", "x-goog-stored-content-encoding",
    "x-amz-checksum-sha256", "x-amz-checksum-sha1", "x-amz-checksum-crc32c", "x-amz-checksum-type",
    "x-amz-checksum-crc32", "x-ms-blob-content-md5", "ETag", "X-Linked-Etag", "Content-Encoding",
]

/// libFuzzer's entry point: runs one input; a violated invariant stops the process.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDigestHeaders(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: fuzzInput(data, size), as: UTF8.self)
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
        $0.hasSuffix("\r") ? $0.dropLast() : $0
    }
    guard !lines.isEmpty else { return 0 }
    let status = statusCode(lines.removeFirst())
    var headers = HTTPHeaders()
    for line in lines {
        if let first = line.utf8.first, first < 0x20 {
            let name = digestFieldNames[Int(first) % digestFieldNames.count]
            headers.add(name: name, value: String(HTTPHeaders.trimmingWhitespace(line.dropFirst())))
        } else if let colon = line.firstIndex(of: ":") {
            let name = HTTPHeaders.trimmingWhitespace(line[..<colon])
            let value = HTTPHeaders.trimmingWhitespace(line[line.index(after: colon)...])
            headers.add(name: String(name), value: String(value))
        }
    }
    let head = ResponseHead(versionMajor: 1, versionMinor: 1, status: status, reason: "", headers: headers)
    for full in [true, false] {
        checkExpectations(head, isFullRepresentation: full)
    }
    for field in headers {
        checkValue(field.value)
    }
    checkDictionary(headers.map(\.value))
    return 0
}

/// The three digits after `HTTP/1.1 `, or 200.
private func statusCode(_ line: Substring) -> Int {
    let digits = line.utf8.dropFirst(9).prefix(3)
    guard digits.count == 3, let value = Int(String(decoding: digits, as: UTF8.self)), value >= 100 else {
        return 200
    }
    return value
}

private func checkExpectations(_ head: ResponseHead, isFullRepresentation: Bool) {
    let found = ServerDigests.expectations(from: head, isFullRepresentation: isFullRepresentation)
    for (index, expectation) in found.trusted.enumerated() {
        let algorithm = expectation.checksum.digestAlgorithm
        let bytes = expectation.checksum.expectedBytes
        require(bytes?.count == algorithm.digestLength, "\(expectation) has a malformed value")
        require(!found.trusted[..<index].contains(expectation), "\(expectation) trusted twice")
        guard case .header(let name) = expectation.source else {
            require(false, "\(expectation) does not come from a header")
            return
        }
        require(head.headers.contains(name: name), "\(expectation) names a missing header")
        require(
            expectation.verdict(for: [algorithm: bytes ?? []]) == .matched,
            "\(expectation) does not match itself")
    }
    switch head.status {
    case 200..<300:
        break
    case 300..<400:
        require(
            found.trusted.allSatisfy { $0.source == .header(ServerDigests.HeaderName.linkedETag) },
            "a redirect contributed \(found.trusted)")
    default:
        require(found.trusted.isEmpty && found.ignored.isEmpty, "status \(head.status) contributed digests")
    }
    for entry in found.ignored {
        require(!entry.reason.isEmpty, "an empty reason for \(entry.header)")
    }
}

/// Base64 round trip, and `--checksum` parsing of the value with every algorithm name.
private func checkValue(_ value: String) {
    for allowURLSafe in [false, true] {
        if let bytes = Base64.decode(value, allowURLSafe: allowURLSafe) {
            let encoded = Base64.encode(bytes)
            require(encoded.utf8.count == (bytes.count + 2) / 3 * 4, "encoded length of \(bytes.count) bytes")
            require(Base64.decode(encoded) == bytes, "\(value.debugDescription) does not round-trip")
        }
    }
    if let bytes = Digest.bytes(hex: value) {
        require(Digest.hex(bytes) == value.lowercased(), "hex \(value.debugDescription) does not round-trip")
    }
    for algorithm in Digest.Algorithm.allCases {
        guard let checksum = try? Checksum(parsing: "\(algorithm.name)=\(value)") else { continue }
        require(checksum.digestAlgorithm == algorithm, "\(checksum) is not \(algorithm)")
        require(checksum.expectedBytes?.count == algorithm.digestLength, "\(checksum) has a malformed value")
        require((try? Checksum(parsing: checksum.description)) == checksum, "\(checksum) does not parse back")
    }
}

/// The structured-field dictionary of every value together and of each alone.
private func checkDictionary(_ values: [String]) {
    for group in [values] + values.prefix(16).map({ [$0] }) {
        guard let members = StructuredFieldDictionary.parse(group) else { continue }
        var keys = Set<String>()
        for member in members {
            require(keys.insert(member.key).inserted, "key \(member.key) twice")
            let first = member.key.utf8.first
            require(
                first.map { ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || $0 == UInt8(ascii: "*") }
                    == true, "key \(member.key.debugDescription)")
            if case .byteSequence(let text) = member.value {
                require(!text.contains(":"), "byte sequence \(text) holds a colon")
            }
        }
    }
}
