import FoundationEssentials

extension Pipeline {
    /// What one download is checked against: the given checksums, the entries of the checksum files
    /// and the server's trusted digests, in that order, plus the server fields that were ignored.
    struct Expectations: Sendable {
        var checked: [ChecksumExpectation]
        var ignored: [RemoteFile.IgnoredDigest]

        /// The algorithms the expectations need, in order, without repeats.
        var algorithms: [Digest.Algorithm] {
            var result: [Digest.Algorithm] = []
            for algorithm in checked.map(\.checksum.digestAlgorithm) where !result.contains(algorithm) {
                result.append(algorithm)
            }
            return result
        }
    }

    /// What the download's hash computes (``Configuration/digestAlgorithms(needing:)``).
    func digestAlgorithms(for expectations: Expectations) -> [Digest.Algorithm] {
        configuration.digestAlgorithms(needing: expectations.algorithms)
    }

    /// The outcome of a verification that passed.
    struct Verification: Sendable {
        /// Every digest computed over the file.
        var digests: [Digest.Algorithm: [UInt8]]
        /// Every expectation with its verdict, for the report.
        var checks: [Report.ChecksumCheck]
        /// The expected checksums the file matched, without repeats.
        var verified: [Checksum]
        /// Seconds from the last byte written to the end of verification.
        var hashTailSeconds: Double

        /// ``digests`` by algorithm name, in lowercase hexadecimal.
        var digestsByName: [String: String] {
            Dictionary(uniqueKeysWithValues: digests.map { ($0.key.name, Digest.hex($0.value)) })
        }
    }

    /// Gathers every expectation for the file `remote` describes, before any byte is fetched.
    ///
    /// - Throws: ``FastpullError/Code/usage`` for a malformed given checksum, or a checksum file
    ///   without a usable entry for this download.
    func expectations(for remote: RemoteFile) throws -> Expectations {
        var checked: [ChecksumExpectation] = []
        for expectation in configuration.knownChecksums {
            let checksum = expectation.checksum
            guard checksum.expectedBytes != nil else {
                let digits = 2 * checksum.digestAlgorithm.digestLength
                throw FastpullError(
                    .usage,
                    "the \(checksum.algorithm) checksum '\(checksum.hexValue)' is not \(digits) hexadecimal digits"
                )
            }
            checked.append(expectation)
        }
        let names = configuration.integrity.checksumFiles.isEmpty ? [] : checksumFileNames(remote: remote)
        for file in configuration.integrity.checksumFiles {
            guard !ChecksumFile.entries(in: file.text).isEmpty else {
                throw FastpullError(
                    .usage,
                    "the checksum file \(file.source) holds no checksum lines (expected lines like "
                        + "'HEX  NAME' as sha256sum writes them, or a single digest)")
            }
            guard
                let checksum = ChecksumFile.parse(file.text, fileNames: names, checksumFileName: file.source)
            else {
                let quoted = names.map { "'\($0)'" }.joined(separator: " or ")
                throw FastpullError(
                    .usage,
                    "the checksum file \(file.source) has no entry for \(quoted), or entries for it that disagree"
                )
            }
            checked.append(ChecksumExpectation(checksum, source: .checksumFile(file.source)))
        }
        checked.append(contentsOf: remote.serverDigests)
        // A server field that could not be used matters only when nothing else verifies the file.
        if checked.isEmpty {
            for ignored in remote.ignoredServerDigests {
                download.emit(.warning("not verifying against the server's \(ignored)"))
            }
        }
        return Expectations(checked: checked, ignored: remote.ignoredServerDigests)
    }

    /// The names a checksum file's entry may have: the output file's, then the last path component of
    /// the URL as given and after redirects.
    private func checksumFileNames(remote: RemoteFile) -> [String] {
        var names: [String] = []
        for url in [download.destination, download.url, remote.finalURL] {
            let name = url.lastPathComponent
            if !name.isEmpty, name != "/", !names.contains(name) {
                names.append(name)
            }
        }
        return names
    }

    /// Checks the size and every expectation against the digests of the whole file.
    ///
    /// `digests` are what the streaming hash computed; an algorithm it did not compute (a hasher that
    /// was not told about it) is computed here by reading the file once more, so nothing goes unchecked.
    ///
    /// - Throws: ``FastpullError/Code/integrity`` naming the algorithm, the expected value and its
    ///   source, and the actual value, for the first expectation the file does not meet.
    func verify(
        digests computed: [Digest.Algorithm: [UInt8]], lastByteAt: ContinuousClock.Instant, size: Int64,
        expectedSize: Int64?, expectations: Expectations, file: OutputFile?
    ) throws -> Verification {
        let aftermath =
            file == nil
            ? "its bytes already went to \(outputPath), which fastpull cannot take back"
            : configuration.integrity.keepsPartialOnMismatch
                ? "the bytes are kept in \(partPath) for inspection and will not be resumed"
                : "the download was discarded"
        let name = file?.path ?? outputPath
        if let expectedSize, size != expectedSize {
            throw FastpullError(
                .integrity,
                "\(name) has \(size) bytes but the server announced \(expectedSize); \(aftermath); run again to retry"
            )
        }
        if let maximum = configuration.integrity.maximumSize, size > maximum {
            throw FastpullError(
                .integrity, "\(name) has \(size) bytes, more than the \(maximum) allowed; \(aftermath)")
        }
        var digests = computed
        if let file {
            let onDisk = try file.size()
            guard onDisk == size else {
                throw FastpullError(
                    .integrity, "\(file.path) holds \(onDisk) bytes, expected \(size); \(aftermath)")
            }
            let missing = digestAlgorithms(for: expectations).filter { digests[$0] == nil }
            if !missing.isEmpty {
                digests.merge(try Self.hash(file, size: size, algorithms: missing)) { old, _ in old }
            }
        }

        var checks: [Report.ChecksumCheck] = []
        var verified: [Checksum] = []
        var mismatches: [String] = []
        for expectation in expectations.checked {
            switch expectation.verdict(for: digests) {
            case .matched:
                checks.append(
                    Report.ChecksumCheck(
                        expected: expectation.checksum,
                        source: Report.ChecksumCheck.Source(expectation.source),
                        verdict: .matched))
                if !verified.contains(expectation.checksum) { verified.append(expectation.checksum) }
            case .mismatched(let actual):
                mismatches.append(expectation.mismatchMessage(path: outputPath, actual: actual))
            case .notChecked:
                // Unreachable: given checksums are validated up front and every algorithm is computed.
                throw FastpullError(
                    .internalError,
                    "the \(expectation.checksum.algorithm) digest of \(outputPath) was not computed; please report this bug"
                )
            }
        }
        if let first = mismatches.first {
            let others = mismatches.count > 1 ? " (and \(mismatches.count - 1) more mismatches)" : ""
            throw FastpullError(.integrity, "\(first)\(others); \(aftermath)")
        }
        for ignored in expectations.ignored {
            checks.append(
                Report.ChecksumCheck(
                    expected: nil, source: .header(ignored.header), verdict: .ignored(reason: ignored.reason))
            )
        }
        let verification = Verification(
            digests: digests, checks: checks, verified: verified,
            hashTailSeconds: (ContinuousClock.now - lastByteAt).seconds)
        download.emit(.verified(Event.Verification(digests: verification.digestsByName, checks: checks)))
        return verification
    }

    /// Gives the verified `file` its name; returns the path it now has. A name taken during the
    /// download fails with ``PlacementError/appeared(_:)``, unless ``Configuration/Resume/renamingBase``
    /// sends the file to the first free `base.1`, `base.2`, … (one whose `.part` is there is another
    /// download's, and skipped; the rename itself refuses a name taken meanwhile).
    func placeVerified(_ file: OutputFile) throws -> String {
        let replacing = configuration.resume.replacesExistingFile || continuesDestination(file)
        do {
            try file.place(at: outputPath, replacing: replacing)
            return outputPath
        } catch PlacementError.appeared where !replacing {
            guard let base = configuration.resume.renamingBase else {
                throw PlacementError.appeared(outputPath)
            }
            var number = 1
            while true {
                let candidate = "\(base).\(number)"
                number += 1
                if FileSystem.exists(candidate + ".part") { continue }
                do {
                    try file.place(at: candidate, replacing: false)
                    download.emit(
                        .warning(
                            "\(outputPath) appeared during the download and was left alone; saved as \(candidate)"
                        ))
                    return candidate
                } catch PlacementError.appeared, PlacementError.notAFile {
                    // Taken meanwhile, or by a folder, a FIFO: the next.
                    continue
                }
            }
        }
    }

    /// After a failed verification: the journal goes first, so that no later run can resume into bytes
    /// known to be bad, then the `.part` file unless ``Configuration/Integrity/keepsPartialOnMismatch`` keeps it
    /// (a later run finds it without a journal and starts over).
    func discardAfterFailedVerification() {
        try? store.remove()
        if !configuration.integrity.keepsPartialOnMismatch {
            try? FileSystem.remove(partPath)
        }
    }

    /// The digests of `[0, size)` of `file`, read back in one pass.
    private static func hash(_ file: OutputFile, size: Int64, algorithms: [Digest.Algorithm]) throws
        -> [Digest.Algorithm: [UInt8]]
    {
        let set = DigestSet(algorithms)
        let chunkSize = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 4096)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < size {
            let want = Int(min(Int64(chunkSize), size - offset))
            let got = try file.read(
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: offset)
            guard got > 0 else {
                throw FastpullError(.integrity, "\(file.path) ended after \(offset) of \(size) bytes")
            }
            set.update(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
            offset += Int64(got)
        }
        return set.finalize()
    }
}

extension Report.ChecksumCheck.Source {
    /// The public form of an expectation's source.
    package init(_ source: ChecksumExpectation.Source) {
        switch source {
        case .user: self = .user
        case .checksumFile(let name): self = .checksumFile(name)
        case .header(let name): self = .header(name)
        case .document(let name): self = .document(name)
        }
    }
}
