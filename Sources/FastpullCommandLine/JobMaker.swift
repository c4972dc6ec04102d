import Fastpull
import FoundationEssentials

extension CommandOptions {
    /// Makes the ``Job`` of each URL, list line or Metalink file of a run: its destination,
    /// checksums, credentials and proxy, from the options. Made once per run (its folders are
    /// standardized once); a list read as it comes (`-i -`) makes each line's job as it arrives.
    package struct JobMaker: Sendable {
        let options: CommandOptions
        let netrc: Netrc?
        let environment: [String: String]
        /// Where relative paths start.
        let base: URL
        /// `--dir`, or the working folder, and the same standardized.
        let folder: URL
        let standardFolder: URL

        /// The job of list line `line`.
        package func job(for line: BatchFile.Line) throws(UsageError) -> Job {
            let source = options.inputFile == "-" ? "stdin" : (options.inputFile ?? "")
            return try job(
                line.url, output: line.output, checksums: line.checksums, origin: "\(source):\(line.number)",
                mirrors: line.mirrors, listLine: "input file \(source) line \(line.number)",
                directory: line.directory, headers: line.headers)
        }

        /// `output` (absolute, or relative to `folder`) as a standardized file URL. A path with nothing
        /// to standardize, as it is or joined to the folder's, is taken as it is: standardizing a URL
        /// re-parses it, and costs more than a small file's download, for each of a batch's lines.
        static func file(_ output: String, in folder: URL, standardFolder: URL) -> URL {
            if CommandOptions.isStandardAbsolutePath(output) {
                return URL(filePath: output, directoryHint: .inferFromPath)
            }
            var joined = standardFolder.path(percentEncoded: false)
            if !joined.hasSuffix("/") { joined += "/" }
            joined += output
            if CommandOptions.isStandardAbsolutePath(joined) {
                return URL(filePath: joined, directoryHint: .inferFromPath)
            }
            return URL(filePath: output, directoryHint: .inferFromPath, relativeTo: folder)
                .standardizedFileURL
        }

        /// The job of `url`, saved at `output` (else in the folder under the server's name).
        func job(
            _ url: URL, output: String?, checksums: [Checksum], origin: String, mirrors: [URL] = [],
            metalink: (file: Metalink.File, document: String)? = nil, listLine: String? = nil,
            directory: String? = nil, headers: [Header] = []
        ) throws(UsageError) -> Job {
            let (clean, embedded) = CommandOptions.splitCredentials(url)
            let configuration = options.configuration
            var settings =
                metalink.map { $0.file.configuration(configuration, document: $0.document) } ?? configuration
            settings.sources.mirrors += mirrors
            settings.request.headers += headers
            // A list line's own folder (aria2's dir=), from the working folder, instead of --dir.
            let folder =
                directory.map { URL(fileURLWithPath: $0, isDirectory: true, relativeTo: base) } ?? folder
            let standardFolder = directory == nil ? standardFolder : folder.standardizedFileURL
            if let listLine, !checksums.isEmpty, settings.integrity.describedChecksums == nil {
                // A list line's checksum is reported as the line's (`sha256 from input file
                // list.txt line 3`), not as the user's --checksum.
                settings.integrity.describedChecksums = .init(document: listLine, checksums: checksums)
            } else {
                settings.integrity.checksums += checksums
            }
            settings.request.credentials =
                options.user ?? embedded ?? clean.host().flatMap { netrc?.credentials(for: $0) }
            settings.request.proxy = try options.proxySetting(for: clean, environment: environment)
            let destination: BatchItem.Destination =
                output.map { .file(Self.file($0, in: folder, standardFolder: standardFolder)) }
                ?? .folder(standardFolder)
            return Job(
                item: BatchItem(url: clean, destination: destination, configuration: settings), origin: origin
            )
        }
    }

    /// The maker of this run's jobs.
    package func jobMaker(netrc: Netrc?, environment: [String: String], workingDirectory: String) -> JobMaker
    {
        let base = URL(fileURLWithPath: workingDirectory, isDirectory: true)
        let folder = directory.map { URL(fileURLWithPath: $0, isDirectory: true, relativeTo: base) } ?? base
        // Standardized once: each of a batch's hundreds of files would otherwise do it again.
        return JobMaker(
            options: self, netrc: netrc, environment: environment, base: base, folder: folder,
            standardFolder: folder.standardizedFileURL)
    }

    /// Whether `-i -` is read as it comes, each line's file started once its line is complete: yes,
    /// unless an option needs to know first that the run has one file (`-o`, `--checksum`,
    /// `--trace`, `--mirror`) or the run is a dry run; then the whole input is read first.
    package var readsInputAsItComes: Bool {
        inputFile == "-" && !dryRun && output == nil && configuration.integrity.checksums.isEmpty
            && configuration.diagnostics.traceFile == nil && mirrors.isEmpty
    }
}
