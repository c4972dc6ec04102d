// libFuzzer target: BatchFile, the input file of `fastpull -i FILE` (`URL [OUTPUT] [ALGO=VALUE]...` a
// line).
//
// Input: the file's text. The text splits into one line per LF (a CRLF counting once), none holding a
// line break; a line's fields, quoted again, split back into the same fields. A parse either throws a
// UsageError naming the file and a line that exists, or returns exactly the lines that are not blank or
// comments, in order, each with an http(s) URL with a host, an output path that is not empty and does not
// read as a checksum, and checksums that print and parse back to themselves. Parsing is deterministic.

import Foundation

/// libFuzzer's entry point: runs one input; a violated invariant stops the process.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBatchFile(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: fuzzInput(data, size), as: UTF8.self)

    let lines = BatchFile.lines(of: text)
    let lineFeeds = text.unicodeScalars.reduce(0) { $0 + ($1 == "\n" ? 1 : 0) }
    require(lines.count == lineFeeds + 1, "\(lines.count) lines for \(lineFeeds) line feeds")
    var contentLines: [Int] = []
    for (offset, line) in lines.enumerated() {
        require(!line.unicodeScalars.contains("\n"), "line \(offset + 1) holds a line feed")
        let content = line.hasSuffix("\r") ? line.dropLast() : line
        let trimmed = content.drop(while: { $0 == " " || $0 == "\t" })
        if !trimmed.isEmpty && !trimmed.hasPrefix("#") { contentLines.append(offset + 1) }
        guard let fields = BatchFile.fields(of: line) else { continue }
        for field in fields {
            require(!field.unicodeScalars.contains("\n"), "field \(field.debugDescription) holds a line feed")
        }
        requireFieldsRoundTrip(fields)
    }

    let first = parse(text, source: "list.txt")
    require(first == parse(text, source: "list.txt"), "parsing is not deterministic")
    switch first {
    case .success(let parsed):
        require(
            parsed.map(\.number) == contentLines,
            "lines \(parsed.map(\.number)) returned, \(contentLines) are neither blank nor comments")
        for line in parsed {
            requireWellFormed(line)
        }
    case .failure(let error):
        let prefix = "error: list.txt:"
        require(error.message.hasPrefix(prefix), "message \(error.message.debugDescription)")
        let number = Int(error.message.dropFirst(prefix.count).prefix(while: { $0.isASCII && $0.isNumber }))
        require(
            number.map { contentLines.contains($0) } == true,
            "\(error.message.debugDescription) names no line that has content")
    }
    if case .failure(let error) = parse(text, source: "-") {
        require(
            error.message.hasPrefix("error: standard input:"), "stdin is \(error.message.debugDescription)")
    }
    return 0
}

private func parse(_ text: String, source: String) -> Result<[BatchFile.Line], UsageError> {
    Result { () throws(UsageError) in try BatchFile.parse(text, source: source) }
}

private func requireWellFormed(_ line: BatchFile.Line) {
    let url = line.url.absoluteString
    require(!url.isEmpty, "line \(line.number): an empty URL")
    require(
        !url.unicodeScalars.contains { $0 == "\n" || $0 == "\r" },
        "line \(line.number): \(url.debugDescription)")
    let scheme = line.url.scheme?.lowercased()
    require(scheme == "http" || scheme == "https", "line \(line.number): scheme of \(url.debugDescription)")
    require(
        line.url.host().map { !$0.isEmpty } == true, "line \(line.number): no host in \(url.debugDescription)"
    )
    if let output = line.output {
        require(!output.isEmpty, "line \(line.number): an empty output path")
        require(
            !output.unicodeScalars.contains("\n"), "line \(line.number): output \(output.debugDescription)")
        require(
            !BatchFile.isChecksum(output),
            "line \(line.number): output \(output.debugDescription) is a checksum")
    }
    for checksum in line.checksums {
        let again = try? Checksum(parsing: checksum.description)
        require(again == checksum, "line \(line.number): \(checksum) does not parse back")
        require(checksum.expectedBytes?.count == checksum.digestAlgorithm.digestLength, "\(checksum)")
    }
}

/// Quoting every field (escaping `\` and `"`) and joining them with spaces must give the fields back,
/// unless joining merged characters across a quote (a field that starts with a combining mark).
private func requireFieldsRoundTrip(_ fields: [String]) {
    var quoted = ""
    var expectedCount = 0
    for (index, field) in fields.enumerated() {
        if index > 0 {
            quoted.append(" ")
            expectedCount += 1
        }
        quoted.append("\"")
        for character in field {
            if character == "\\" || character == "\"" {
                quoted.append("\\")
                expectedCount += 1
            }
            quoted.append(character)
        }
        quoted.append("\"")
        expectedCount += field.count + 2
    }
    guard quoted.count == expectedCount else { return }
    let again = BatchFile.fields(of: Substring(quoted))
    require(
        again == fields, "\(fields) quoted as \(quoted.debugDescription) give \(String(describing: again))")
}
