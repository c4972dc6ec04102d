// libFuzzer target: ChecksumFile (sha256sum / BSD / OpenSSL checksum files).
//
// Input: the checksum file's text. Every entry must hold a well-formed digest of its algorithm's length;
// a lookup must answer nil or the digest of an entry that names the file (or the only, nameless
// entry); the algorithm hint must come from the file name alone.

private let fileNames = ["x.iso", "dist/x.iso", "-", "", "SHA256SUMS"]

/// libFuzzer's entry point: runs one input; a violated invariant stops the process.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzChecksumFile(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: fuzzInput(data, size), as: UTF8.self)
    let entries = ChecksumFile.entries(in: text)
    for entry in entries {
        let algorithm = entry.checksum.digestAlgorithm
        require(algorithm != .crc32c, "a checksum file entry for crc32c")
        require(
            entry.checksum.expectedBytes?.count == algorithm.digestLength, "\(entry) has a malformed digest")
        require(entry.name.map { !$0.isEmpty } ?? true, "an entry with an empty name")
    }
    let names = fileNames + entries.prefix(4).compactMap(\.name)
    for name in names {
        for checksumFileName in [nil, "SHA512SUMS", "x.iso.md5", name] {
            guard let found = ChecksumFile.parse(text, fileName: name, checksumFileName: checksumFileName)
            else {
                continue
            }
            let nameless = entries.count == 1 && entries[0].name == nil
            require(
                nameless
                    || entries.contains { $0.checksum == found && $0.name.map(baseName) == baseName(name) },
                "\(found) for \(name.debugDescription) is not an entry for that name")
        }
    }
    let fromNames = ChecksumFile.parse(text, fileNames: names)
    require(
        fromNames == nil || entries.contains { $0.checksum == fromNames }, "\(String(describing: fromNames))")
    if let hint = ChecksumFile.algorithmHint(checksumFileName: text) {
        require(hint != .crc32c, "crc32c hint from \(text.debugDescription)")
    }
    return 0
}

private func baseName(_ name: String) -> String {
    guard let slash = name.lastIndex(of: "/") else { return name }
    return String(name[name.index(after: slash)...])
}
