// libFuzzer target: ContentDisposition (RFC 6266 / RFC 8187 file names) and OutputName, which turns a
// server's name or a URL's last path component into the name a download is saved under.
//
// Input: a Content-Disposition field value, also taken as a raw name and as a URL path. Every name
// OutputName gives must be safe to create in the output folder: not empty, at most 255 UTF-8 bytes, no
// `/` or `\`, no control characters or direction marks, no leading dot (so never `.` or `..`) and no
// surrounding whitespace; a safe name sanitizes to itself; `derive` gives the same answer twice;
// `fileName(in:)` answers one of the header's own file name parameters; an RFC 8187 value decodes back
// from its own percent-encoding.

import Foundation

private let fixedURL = URL(string: "https://example.org/downloads/file.bin")!

/// libFuzzer's entry point: runs one input; a violated invariant stops the process.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzContentDisposition(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: fuzzInput(data, size), as: UTF8.self)

    let parameters = ContentDisposition.parameters(of: text)
    for parameter in parameters {
        require(!parameter.name.isEmpty, "an empty parameter name in \(text.debugDescription)")
        require(
            !parameter.name.contains(where: { $0 == "=" || $0 == ";" }),
            "parameter name \(parameter.name.debugDescription)")
    }
    let fileName = ContentDisposition.fileName(in: text)
    if let fileName {
        let plain = parameters.filter { $0.name == "filename" }.map(\.value)
        let extended = parameters.filter { $0.name == "filename*" }
            .compactMap { ContentDisposition.decodeExtended($0.value) }
        require(
            plain.contains(fileName) || extended.contains(fileName),
            "\(fileName.debugDescription) is no file name parameter of \(text.debugDescription)")
    }
    require(ContentDisposition.fileName(in: text) == fileName, "fileName(in:) is not deterministic")

    // RFC 8187: any text survives percent-encoding every byte, in either charset.
    let bytes = Array(text.utf8)
    let encoded = bytes.map { percentEncoded($0) }.joined()
    let utf8 = ContentDisposition.decodeExtended("UTF-8''" + encoded)
    require(
        utf8.map(scalars) == scalars(text), "UTF-8 round trip: \(String(describing: utf8?.debugDescription))")
    let latin = ContentDisposition.decodeExtended("iso-8859-1'en'" + encoded.lowercased())
    require(
        latin.map { $0.unicodeScalars.map(\.value) } == bytes.map(UInt32.init),
        "ISO-8859-1 round trip: \(String(describing: latin?.debugDescription))")
    if let decoded = ContentDisposition.decodeExtended(text) {
        requireSafeOrNil(OutputName.sanitize(decoded), from: decoded)
    }

    // Names made safe: the raw text, the header's file name, and everything derived.
    requireSafeOrNil(OutputName.sanitize(text), from: text)
    if let fileName { requireSafeOrNil(OutputName.sanitize(fileName), from: fileName) }

    let derived = OutputName.derive(from: fixedURL, contentDisposition: text)
    requireSafe(derived, from: text)
    require(
        OutputName.derive(from: fixedURL, contentDisposition: text) == derived, "derive is not deterministic")
    if fileName.flatMap(OutputName.sanitize) == nil {
        require(derived == "file.bin", "\(derived.debugDescription) without a usable file name")
    } else {
        require(derived == fileName.flatMap(OutputName.sanitize), "derive ignores the header's file name")
    }

    // The text as the last path component of a URL, percent-encoded whole (so it decodes to the text).
    if !text.isEmpty, let url = URL(string: "http://example.org/d/" + encoded) {
        let name = OutputName.fromURL(url)
        require(
            name.map(scalars) == OutputName.sanitize(text).map(scalars),
            "fromURL gives \(String(describing: name?.debugDescription)) for \(text.debugDescription)")
    }
    // The text as written in a URL, when it is one.
    if let url = URL(string: "http://example.org/" + text) {
        let derived = OutputName.derive(from: url, contentDisposition: nil)
        requireSafe(derived, from: text)
        require(OutputName.derive(from: url, contentDisposition: nil) == derived, "derive from a URL")
        require(derived == OutputName.fromURL(url) ?? OutputName.fallback, "derive without a header")
    }
    return 0
}

/// The safety rules `OutputName.sanitize` promises, and that a safe name sanitizes to itself.
private func requireSafe(_ name: String, from input: String) {
    let context = "\(name.debugDescription) from \(input.debugDescription)"
    require(!name.isEmpty, "an empty name from \(input.debugDescription)")
    require(name.utf8.count <= 255, "\(name.utf8.count) bytes: \(context)")
    for scalar in name.unicodeScalars {
        require(scalar != "/" && scalar != "\\", "a separator in \(context)")
        require(!isUnsafe(scalar), "U+\(String(scalar.value, radix: 16)) in \(context)")
    }
    let first = name.unicodeScalars.first!
    let last = name.unicodeScalars.last!
    require(first != ".", "a leading dot: \(context)")
    require(!CharacterSet.whitespaces.contains(first), "leading whitespace: \(context)")
    require(!CharacterSet.whitespaces.contains(last), "trailing whitespace: \(context)")
    let again = OutputName.sanitize(name)
    require(
        again.map(scalars) == scalars(name),
        "sanitize is not idempotent: \(context) -> \(String(describing: again))")
}

private func requireSafeOrNil(_ name: String?, from input: String) {
    if let name { requireSafe(name, from: input) }
}

/// Control characters (C0, DEL, C1) and the bidirectional marks, overrides and isolates.
private func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x00...0x1F, 0x7F...0x9F, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
    default: return false
    }
}

/// The scalars of `text`: names are compared scalar by scalar, not by canonical equivalence.
private func scalars(_ text: String) -> [Unicode.Scalar] {
    Array(text.unicodeScalars)
}

private func percentEncoded(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return "%" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0x0F)])
}
