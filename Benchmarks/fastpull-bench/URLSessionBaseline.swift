import Dispatch
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// The URLSession baseline: what a Swift program gets from Foundation alone. It runs as a child of the
/// harness (`fastpull-bench --urlsession-child …`), so it is timed and measured like every other tool.
///
/// One long-lived session, no cache, `httpMaximumConnectionsPerHost` equal to the segment count,
/// `Accept-Encoding: identity`; a delegate streams each task's bytes into the output with `pwrite` at the
/// task's offset. For `--segments N > 1` a HEAD request gives the size, then N range requests run at once
/// (each must answer 206 with the requested start). HTTPS trusts the CA file named by the
/// `URLSessionCertificateAuthorityInfoFile` environment variable (read by FoundationNetworking).
enum URLSessionBaseline {
    /// Runs the child mode with the arguments after `--urlsession-child`; exits 0 on success, 1 on a
    /// failed transfer, 2 on bad usage.
    static func main(_ arguments: [String]) -> Never {
        var url: URL?
        var output: String?
        var batch: String?
        var outputDirectory: String?
        var segments = 1
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            guard let value = remaining.popFirst() else { fail(usage: "\(argument) needs a value") }
            switch argument {
            case "--url": url = URL(string: value)
            case "--output": output = value
            case "--batch": batch = value
            case "--output-dir": outputDirectory = value
            case "--segments":
                guard let count = Int(value), count >= 1 else { fail(usage: "--segments: \(value)") }
                segments = count
            default: fail(usage: "unknown option \(argument)")
            }
        }
        let baseline = Downloader(connections: segments)
        let problems: [String]
        if let url, let output {
            problems = baseline.download(url, to: output, segments: segments)
        } else if let batch, let outputDirectory {
            guard let text = try? String(contentsOfFile: batch, encoding: .utf8) else {
                fail(usage: "cannot read \(batch)")
            }
            let urls = text.split(separator: "\n").compactMap { URL(string: String($0)) }
            problems = baseline.downloadAll(urls, into: outputDirectory)
        } else {
            fail(usage: "expected --url U --output P or --batch FILE --output-dir D")
        }
        for problem in problems { FileHandle.standardError.write(Data("urlsession: \(problem)\n".utf8)) }
        exit(problems.isEmpty ? 0 : 1)
    }

    private static func fail(usage message: String) -> Never {
        FileHandle.standardError.write(Data("urlsession: \(message)\n".utf8))
        exit(2)
    }
}

/// One session and its delegate; every method blocks until its transfers are done.
private final class Downloader {
    private let delegate = StreamingDelegate()
    private let session: URLSession

    init(connections: Int) {
        let configuration = URLSessionConfiguration.default
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpMaximumConnectionsPerHost = max(connections, 1)
        configuration.httpAdditionalHeaders = ["Accept-Encoding": "identity"]
        configuration.timeoutIntervalForRequest = 60
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
    }

    /// Downloads `url` to `path` with `segments` range requests (one plain GET when 1).
    func download(_ url: URL, to path: String, segments: Int) -> [String] {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return ["cannot create \(path): \(systemMessage())"] }
        defer { close(descriptor) }
        guard segments > 1 else {
            return run([Transfer(request: request(url), descriptor: descriptor, start: 0, end: nil)])
        }
        var head = request(url)
        head.httpMethod = "HEAD"
        let probe = Transfer(request: head, descriptor: -1, start: 0, end: nil)
        let probed = run([probe])
        guard probed.isEmpty else { return probed }
        guard let size = delegate.lastContentLength, size > 0 else { return ["HEAD gave no Content-Length"] }
        guard ftruncate(descriptor, off_t(size)) == 0 else { return ["ftruncate: \(systemMessage())"] }
        let count = Int64(min(Int64(segments), size))
        let transfers = (0..<count).map { index in
            let start = size * index / count
            let end = size * (index + 1) / count
            var ranged = request(url)
            ranged.setValue("bytes=\(start)-\(end - 1)", forHTTPHeaderField: "Range")
            return Transfer(request: ranged, descriptor: descriptor, start: start, end: end)
        }
        return run(transfers)
    }

    /// Downloads every URL into `directory` (named by the URL's last path component), all at once; the
    /// session's per-host limit queues them.
    func downloadAll(_ urls: [URL], into directory: String) -> [String] {
        run(
            urls.map {
                Transfer(
                    request: request($0), descriptor: -1, start: 0, end: nil,
                    path: directory + "/" + $0.lastPathComponent)
            })
    }

    private func request(_ url: URL) -> URLRequest {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: 60)
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        return request
    }

    private func run(_ transfers: [Transfer]) -> [String] {
        let group = DispatchGroup()
        var tasks: [URLSessionDataTask] = []
        for transfer in transfers {
            let task = session.dataTask(with: transfer.request)
            group.enter()
            delegate.register(task.taskIdentifier, transfer, group: group)
            tasks.append(task)
        }
        for task in tasks { task.resume() }
        group.wait()
        return delegate.takeProblems()
    }
}

/// One task's destination and the range it must deliver.
private struct Transfer: Sendable {
    var request: URLRequest
    /// The shared output descriptor, or -1 to open `path` when the response arrives (batches), or -1
    /// with no path to discard the body (HEAD).
    var descriptor: Int32
    var start: Int64
    /// The end (exclusive) of a ranged request: its response must be a 206 starting at `start`.
    var end: Int64?
    var path: String? = nil
    var ownsDescriptor = false
    var offset: Int64 = 0
    var group: DispatchGroup? = nil
}

/// Streams response bodies to their files. All mutable state is behind one `Mutex` (the delegate queue
/// is serial anyway), so the class is `Sendable` without exceptions.
private final class StreamingDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private struct State {
        var transfers: [Int: Transfer] = [:]
        var problems: [String] = []
        var lastContentLength: Int64?
    }

    private let state = Mutex(State())

    var lastContentLength: Int64? { state.withLock { $0.lastContentLength } }

    func register(_ identifier: Int, _ transfer: Transfer, group: DispatchGroup) {
        var transfer = transfer
        transfer.offset = transfer.start
        transfer.group = group
        state.withLock { $0.transfers[identifier] = transfer }
    }

    func takeProblems() -> [String] {
        state.withLock { state in
            let problems = state.problems
            state.problems = []
            return problems
        }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let http = response as? HTTPURLResponse
        let status = http?.statusCode ?? 0
        let problem: String? = state.withLock { state in
            guard var transfer = state.transfers[dataTask.taskIdentifier] else { return "unknown task" }
            let url = transfer.request.url?.absoluteString ?? "?"
            if let end = transfer.end {
                let expected = "bytes \(transfer.start)-\(end - 1)/"
                let contentRange = http?.value(forHTTPHeaderField: "Content-Range") ?? ""
                guard status == 206, contentRange.hasPrefix(expected) else {
                    return "\(url): expected 206 \(expected)…, got \(status) \(contentRange)"
                }
            } else if status != 200 {
                return "\(url): HTTP \(status)"
            }
            if transfer.request.httpMethod == "HEAD" {
                state.lastContentLength =
                    response.expectedContentLength >= 0 ? response.expectedContentLength : nil
            }
            if transfer.descriptor < 0, let path = transfer.path {
                let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                guard descriptor >= 0 else { return "cannot create \(path): \(systemMessage())" }
                transfer.descriptor = descriptor
                transfer.ownsDescriptor = true
                state.transfers[dataTask.taskIdentifier] = transfer
            }
            return nil
        }
        if let problem {
            state.withLock { $0.problems.append(problem) }
            completionHandler(.cancel)
        } else {
            completionHandler(.allow)
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let problem: String? = state.withLock { state in
            guard var transfer = state.transfers[dataTask.taskIdentifier], transfer.descriptor >= 0 else {
                return nil
            }
            if let end = transfer.end, transfer.offset + Int64(data.count) > end {
                return "\(transfer.request.url?.absoluteString ?? "?"): more bytes than the range"
            }
            let written = data.withUnsafeBytes { bytes in
                var done = 0
                while done < bytes.count {
                    let count = pwrite(
                        transfer.descriptor, bytes.baseAddress! + done, bytes.count - done,
                        off_t(transfer.offset) + off_t(done))
                    if count < 0 && errno == EINTR { continue }
                    guard count > 0 else { return false }
                    done += count
                }
                return true
            }
            guard written else { return "pwrite: \(systemMessage())" }
            transfer.offset += Int64(data.count)
            state.transfers[dataTask.taskIdentifier] = transfer
            return nil
        }
        if let problem {
            state.withLock { $0.problems.append(problem) }
            dataTask.cancel()
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let group: DispatchGroup? = state.withLock { state in
            guard let transfer = state.transfers.removeValue(forKey: task.taskIdentifier) else { return nil }
            let url = transfer.request.url?.absoluteString ?? "?"
            if let error {
                let cancelled = (error as? URLError)?.code == .cancelled
                if !cancelled { state.problems.append("\(url): \(error.localizedDescription)") }
            } else if let end = transfer.end, transfer.offset != end {
                state.problems.append("\(url): range ended at \(transfer.offset), expected \(end)")
            }
            if transfer.ownsDescriptor { close(transfer.descriptor) }
            return transfer.group
        }
        group?.leave()
    }
}
