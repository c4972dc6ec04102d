import Fastpull
import FastpullEngine
import FoundationEssentials

/// aria2's JSON-RPC (`POST /jsonrpc`), answered from a ``DownloadQueue``: the methods an HTTP-only
/// aria2 answers for adding, watching, pausing, ordering and removing downloads, with aria2's field
/// names and string-valued numbers, batches and `system.multicall`, and the `token:` secret. A call
/// without the secret, when one is set, is refused as aria2 refuses it (error 1, "Unauthorized").
public final class Aria2RPC: Sendable {
    private let queue: DownloadQueue
    private let secret: String?
    /// Where a download is saved when its call names no `dir`.
    private let defaultDirectory: String
    /// Called by `aria2.shutdown` and `aria2.forceShutdown`, after the answer is made.
    private let onShutdown: @Sendable () -> Void

    /// The methods answered, as `system.listMethods` lists them.
    public static let methods = [
        "aria2.addUri", "aria2.remove", "aria2.forceRemove", "aria2.pause", "aria2.forcePause",
        "aria2.pauseAll", "aria2.forcePauseAll", "aria2.unpause", "aria2.unpauseAll", "aria2.tellStatus",
        "aria2.tellActive", "aria2.tellWaiting", "aria2.tellStopped", "aria2.changePosition",
        "aria2.getGlobalStat", "aria2.removeDownloadResult", "aria2.purgeDownloadResult", "aria2.getVersion",
        "aria2.shutdown", "aria2.forceShutdown", "system.multicall", "system.listMethods",
    ]

    /// Answers for `queue`; `secret`, when set, must come first in every call's parameters as
    /// `token:SECRET`.
    public init(
        queue: DownloadQueue, secret: String?, defaultDirectory: String,
        onShutdown: @escaping @Sendable () -> Void = {}
    ) {
        self.queue = queue
        self.secret = secret
        self.defaultDirectory = defaultDirectory
        self.onShutdown = onShutdown
    }

    /// An error a call answers, with aria2's code (1 for every failure, as aria2 uses) or JSON-RPC's.
    struct CallError: Error {
        var code: Int64
        var message: String
    }

    /// The answer to a request body: one call, or a batch (an array of calls).
    public func answer(_ body: [UInt8]) -> [UInt8] {
        guard let request = JSONInput.parse(body) else {
            return Array(Self.failure(id: .null, CallError(code: -32700, message: "Parse error")).text.utf8)
        }
        if let calls = request.array {
            return Array(JSONValue.array(calls.map(answer(call:))).text.utf8)
        }
        return Array(answer(call: request).text.utf8)
    }

    private func answer(call: JSONValue) -> JSONValue {
        let id = call["id"] ?? .null
        guard let method = call["method"]?.string else {
            return Self.failure(id: id, CallError(code: -32600, message: "Invalid Request"))
        }
        do {
            let result = try perform(method, call["params"]?.array ?? [])
            return .object([("id", id), ("jsonrpc", .string("2.0")), ("result", result)])
        } catch let error as CallError {
            return Self.failure(id: id, error)
        } catch {
            return Self.failure(id: id, CallError(code: 1, message: "\(error)"))
        }
    }

    private static func failure(id: JSONValue, _ error: CallError) -> JSONValue {
        .object([
            ("id", id), ("jsonrpc", .string("2.0")),
            ("error", .object([("code", .integer(error.code)), ("message", .string(error.message))])),
        ])
    }

    /// Runs `method` with `params` (the token, where one is set, taken off first).
    private func perform(_ method: String, _ given: [JSONValue]) throws -> JSONValue {
        var params = given
        if method == "system.multicall" {
            let calls = params.first?.array ?? []
            return .array(
                calls.map { call in
                    do {
                        return .array([
                            try perform(call["methodName"]?.string ?? "", call["params"]?.array ?? [])
                        ])
                    } catch let error as CallError {
                        return .object([("code", .integer(error.code)), ("message", .string(error.message))])
                    } catch {
                        return .object([("code", .integer(1)), ("message", .string("\(error)"))])
                    }
                })
        }
        if method == "system.listMethods" { return .array(Self.methods.map { .string($0) }) }
        if let secret {
            guard let given = params.first?.string, Self.sameSecret(given, "token:\(secret)") else {
                throw CallError(code: 1, message: "Unauthorized")
            }
            params.removeFirst()
        } else if params.first?.string?.hasPrefix("token:") == true {
            params.removeFirst()
        }
        func gid(_ index: Int = 0) throws -> String {
            guard let value = params[safe: index]?.string else {
                throw CallError(code: 1, message: "\(method) needs a GID")
            }
            return value
        }
        let keys = { (index: Int) in params[safe: index]?.array?.compactMap(\.string) }
        switch method {
        case "aria2.addUri":
            let uris = params.first?.array?.compactMap(\.string) ?? []
            let options = Self.options(params[safe: 1])
            // Refused now, as aria2 refuses a bad option: never added without the check it asked for.
            do {
                _ = try ItemOptions.configuration(options)
            } catch {
                throw CallError(code: 1, message: error.message)
            }
            let item = try queue.add(
                uris: uris, directory: options["dir"] ?? defaultDirectory, outputName: options["out"],
                options: options, position: params[safe: 2]?.integer.map { Int($0) })
            return .string(item.gid)
        case "aria2.remove", "aria2.forceRemove":
            return .string(try queue.remove(gid()).gid)
        case "aria2.pause", "aria2.forcePause":
            return .string(try queue.pause(gid()).gid)
        case "aria2.unpause":
            return .string(try queue.unpause(gid()).gid)
        case "aria2.pauseAll", "aria2.forcePauseAll":
            for item in try queue.list.downloads([.active, .waiting]) { _ = try? queue.pause(item.gid) }
            return .string("OK")
        case "aria2.unpauseAll":
            for item in try queue.list.downloads([.paused]) { _ = try? queue.unpause(item.gid) }
            return .string("OK")
        case "aria2.tellStatus":
            let id = try gid()
            guard let item = try queue.list.download(id) else {
                throw CallError(code: 1, message: "GID \(id) is not found")
            }
            return status(item, keys: keys(1))
        case "aria2.tellActive":
            return .array(try queue.list.downloads([.active]).map { status($0, keys: keys(0)) })
        case "aria2.tellWaiting", "aria2.tellStopped":
            let statuses: Set<ItemStatus> =
                method == "aria2.tellWaiting" ? [.waiting, .paused] : [.complete, .error, .removed]
            let all = try queue.list.downloads(statuses)
            let offset = Int(params[safe: 0]?.integer ?? 0)
            let count = Int(params[safe: 1]?.integer ?? 0)
            // A negative offset counts from the end, and the items then come in reverse (aria2's rule).
            let ordered = offset < 0 ? Array(all.reversed()) : all
            let start = offset < 0 ? -offset - 1 : offset
            let slice = ordered.dropFirst(start).prefix(max(count, 0))
            return .array(slice.map { status($0, keys: keys(2)) })
        case "aria2.changePosition":
            let how = params[safe: 2]?.string.flatMap(DownloadList.PositionAnchor.init(rawValue:))
            guard let how, let offset = params[safe: 1]?.integer else {
                throw CallError(
                    code: 1,
                    message: "aria2.changePosition needs a GID, a position and POS_SET, POS_CUR or POS_END")
            }
            return .integer(Int64(try queue.list.changePosition(gid(), by: Int(offset), from: how)))
        case "aria2.getGlobalStat":
            let all = try queue.list.downloads()
            func count(_ statuses: Set<ItemStatus>) -> JSONValue {
                .string(String(all.count { statuses.contains($0.status) }))
            }
            let speed = all.filter { $0.status == .active }.compactMap { queue.live($0.gid)?.bytesPerSecond }
                .reduce(0, +)
            return .object([
                ("downloadSpeed", .string(String(speed))), ("uploadSpeed", .string("0")),
                ("numActive", count([.active])),
                ("numWaiting", count([.waiting, .paused])),
                ("numStopped", count([.complete, .error, .removed])),
                ("numStoppedTotal", count([.complete, .error, .removed])),
            ])
        case "aria2.removeDownloadResult":
            try queue.list.purge(gid())
            return .string("OK")
        case "aria2.purgeDownloadResult":
            for item in try queue.list.downloads([.complete, .error, .removed]) {
                try queue.list.purge(item.gid)
            }
            return .string("OK")
        case "aria2.shutdown", "aria2.forceShutdown":
            onShutdown()
            return .string("OK")
        case "aria2.getVersion":
            return .object([
                ("version", .string("1.36.0")), ("fastpull", .string(fastpullVersion)),
                ("enabledFeatures", .array([.string("HTTPS"), .string("Metalink")])),
            ])
        case _ where method.hasPrefix("aria2.") && (method.contains("Torrent") || method.contains("Peers")):
            throw CallError(code: 1, message: "BitTorrent is not supported")
        default:
            // aria2's answer (not JSON-RPC's -32601).
            throw CallError(code: 1, message: "No such method: \(method)")
        }
    }

    /// Compares the secret in time independent of where the texts differ.
    private static func sameSecret(_ given: String, _ expected: String) -> Bool {
        let a = Array(given.utf8)
        let b = Array(expected.utf8)
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
        }
        return difference == 0
    }

    /// aria2's options object: every value as a string.
    private static func options(_ value: JSONValue?) -> [String: String] {
        guard case .object(let fields) = value else { return [:] }
        var options: [String: String] = [:]
        for (key, value) in fields {
            switch value {
            case .string(let text): options[key] = text
            case .integer(let number): options[key] = String(number)
            case .bool(let flag): options[key] = flag ? "true" : "false"
            // `header` may be given several times: one per line.
            case .array(let values): options[key] = values.compactMap(\.string).joined(separator: "\n")
            default: break
            }
        }
        return options
    }

    /// What `aria2.tellStatus` says of an item: aria2's keys, numbers as strings, a running one's live
    /// progress; only `keys` when given.
    func status(_ stored: ManagedDownload, keys: [String]?) -> JSONValue {
        var item = stored
        let live = stored.status == .active ? queue.live(stored.gid) : nil
        if let live {
            item.totalLength = live.totalLength ?? item.totalLength
            item.completedLength = live.completedLength
        }
        let path = live?.path ?? item.outputName.map { FileSystem.join(item.directory, $0) } ?? ""
        let speed = String(live?.bytesPerSecond ?? 0)
        var fields: [(String, JSONValue)] = [
            ("gid", .string(item.gid)), ("status", .string(item.status.rawValue)),
            ("totalLength", .string(String(item.totalLength))),
            ("completedLength", .string(String(item.completedLength))), ("uploadLength", .string("0")),
            ("downloadSpeed", .string(speed)), ("uploadSpeed", .string("0")),
            ("connections", .string(String(live?.connections ?? 0))),
            ("numPieces", .string("0")), ("pieceLength", .string("1048576")),
            ("dir", .string(item.directory)),
            (
                "files",
                .array([
                    .object([
                        ("index", .string("1")), ("path", .string(path)),
                        ("length", .string(String(item.totalLength))),
                        ("completedLength", .string(String(item.completedLength))),
                        ("selected", .string("true")),
                        (
                            "uris",
                            .array(
                                item.uris.map {
                                    .object([("uri", .string($0)), ("status", .string("used"))])
                                })
                        ),
                    ])
                ])
            ),
        ]
        if let code = item.errorCode { fields.append(("errorCode", .string(String(code)))) }
        if let message = item.errorMessage { fields.append(("errorMessage", .string(message))) }
        if let keys { fields = fields.filter { keys.contains($0.0) } }
        return .object(fields)
    }
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
