import Fastpull
import FastpullEngine
import FoundationEssentials
import Synchronization

/// aria2's RPC, answered from a ``DownloadQueue``: JSON-RPC (`POST /jsonrpc` and its WebSocket) and
/// XML-RPC (`POST /rpc`) over the same methods, with aria2's field names and string-valued numbers,
/// batches and `system.multicall`, and the `token:` secret. A call without the secret, when one is
/// set, is refused as aria2 refuses it (error 1, "Unauthorized").
public final class Aria2RPC: Sendable {
    let queue: DownloadQueue
    private let secret: String?
    /// Where a download is saved when its call names no `dir`, and the folder outputs must stay in.
    let folder: DownloadFolder
    /// The aria2 session file `aria2.saveSession` writes, when there is one.
    let sessionPath: String?
    /// Called by `aria2.shutdown` and `aria2.forceShutdown`, after the answer is made.
    private let onShutdown: @Sendable () -> Void
    /// The options set for the whole daemon (`changeGlobalOption`), by aria2's names.
    let globalOptions: Mutex<[String: String]>
    /// This run's identifier (`aria2.getSessionInfo`).
    let sessionID = (0..<20).map { _ in String(UInt8.random(in: 0...255), radix: 16) }.joined()

    /// The methods answered, as `system.listMethods` lists them.
    public static let methods = [
        "aria2.addUri", "aria2.addMetalink", "aria2.remove", "aria2.forceRemove", "aria2.pause",
        "aria2.forcePause", "aria2.pauseAll", "aria2.forcePauseAll", "aria2.unpause", "aria2.unpauseAll",
        "aria2.tellStatus", "aria2.getUris", "aria2.getFiles", "aria2.getServers", "aria2.tellActive",
        "aria2.tellWaiting", "aria2.tellStopped", "aria2.changePosition", "aria2.changeUri",
        "aria2.getOption", "aria2.changeOption", "aria2.getGlobalOption", "aria2.changeGlobalOption",
        "aria2.getGlobalStat", "aria2.purgeDownloadResult", "aria2.removeDownloadResult", "aria2.getVersion",
        "aria2.getSessionInfo", "aria2.shutdown", "aria2.forceShutdown", "aria2.saveSession",
        "system.multicall", "system.listMethods", "system.listNotifications",
    ]

    /// aria2's notifications, as `system.listNotifications` lists them.
    static let notifications = [
        "aria2.onDownloadStart", "aria2.onDownloadPause", "aria2.onDownloadStop", "aria2.onDownloadComplete",
        "aria2.onDownloadError", "aria2.onBtDownloadComplete",
    ]

    /// Answers for `queue`; `secret`, when set, must come first in every call's parameters as
    /// `token:SECRET`. Downloads go into `folder` (and, unless it allows any, nowhere else);
    /// `saveSession` writes `sessionPath`.
    public init(
        queue: DownloadQueue, secret: String?, folder: DownloadFolder, sessionPath: String? = nil,
        onShutdown: @escaping @Sendable () -> Void = {}
    ) {
        self.queue = queue
        self.secret = secret
        self.folder = folder
        self.sessionPath = sessionPath
        self.onShutdown = onShutdown
        globalOptions = Mutex([
            "dir": folder.path, "max-concurrent-downloads": String(queue.maximumActive),
            "max-overall-download-limit": "0", "max-download-limit": "0",
        ])
    }

    /// An error a call answers, with aria2's code (1 for every failure, as aria2 uses) or JSON-RPC's.
    struct CallError: Error {
        var code: Int64
        var message: String
    }

    /// The answer to a JSON-RPC request body: one call, or a batch (an array of calls).
    public func answer(_ body: [UInt8]) -> [UInt8] { respond(json: body).body }

    /// How long an answer that refuses the secret waits before it leaves: guessing the secret costs
    /// that much per connection, on a timer (the connection's thread sleeps), never a busy loop.
    static let refusalDelay = Duration.milliseconds(500)

    /// The most calls one request may carry, in a batch or a `system.multicall`: a 2 MiB body of tiny
    /// calls would otherwise ask for answers hundreds of times its size.
    static let mostCalls = 1000

    /// The answer to a JSON-RPC body, and whether it refuses a call's secret.
    func respond(json body: [UInt8]) -> (body: [UInt8], refusesSecret: Bool) {
        guard let request = JSONInput.parse(body) else {
            return (
                Array(Self.failure(id: .null, CallError(code: -32700, message: "Parse error")).text.utf8),
                false
            )
        }
        if let calls = request.array, calls.count > Self.mostCalls {
            let error = CallError(
                code: -32600, message: "a batch of \(calls.count) calls; at most \(Self.mostCalls)")
            return (Array(Self.failure(id: .null, error).text.utf8), false)
        }
        let scope = RefusalScope()
        let answers =
            request.array.map { calls in calls.map { answer(call: $0, scope: scope) } }
            ?? [answer(call: request, scope: scope)]
        return (Array((request.array == nil ? answers[0] : .array(answers)).text.utf8), scope.refused)
    }

    /// aria2's message for a call without the right secret.
    static let unauthorized = "Unauthorized"

    /// The answer to an XML-RPC body, and whether it refuses the call's secret.
    func respond(xml body: [UInt8]) -> (body: [UInt8], refusesSecret: Bool) {
        let scope = RefusalScope()
        return (answer(xml: body, scope: scope), scope.refused)
    }

    /// The answer to an XML-RPC request body (`POST /rpc`): a `methodResponse` with the result, or
    /// a fault with aria2's code and message.
    public func answer(xml body: [UInt8]) -> [UInt8] { answer(xml: body, scope: RefusalScope()) }

    private func answer(xml body: [UInt8], scope: RefusalScope) -> [UInt8] {
        do {
            let (method, params) = try XMLRPC.call(body)
            return XMLRPC.response(
                try result(of: method, params, faultKeys: ("faultCode", "faultString"), scope: scope))
        } catch let error as XMLElement.Malformed {
            return XMLRPC.fault(code: -32700, message: "Parse error: \(error.reason)")
        } catch let error as CallError {
            return XMLRPC.fault(code: error.code, message: error.message)
        } catch {
            return XMLRPC.fault(code: 1, message: "\(error)")
        }
    }

    private func answer(call: JSONValue, scope: RefusalScope) -> JSONValue {
        let id = call["id"] ?? .null
        guard let method = call["method"]?.string else {
            return Self.failure(id: id, CallError(code: -32600, message: "Invalid Request"))
        }
        do {
            let result = try result(of: method, call["params"]?.array ?? [], scope: scope)
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

    /// Runs `method` with `params`: `system.*` as they are, every other one once its token (where a
    /// secret is set) is checked and taken off. A failed call inside `system.multicall` is answered as
    /// an object with `faultKeys` (JSON-RPC's `code` and `message`, XML-RPC's `faultCode` and
    /// `faultString`).
    ///
    /// Once one call of a request gives a wrong secret, every later call of that request is refused
    /// without its secret being looked at: a batch or multicall of guesses learns nothing past the
    /// first, and the whole answer waits ``refusalDelay``.
    func result(
        of method: String, _ given: [JSONValue], faultKeys: (String, String) = ("code", "message"),
        scope: RefusalScope = RefusalScope()
    ) throws -> JSONValue {
        var params = given
        switch method {
        case "system.multicall":
            let calls = params.first?.array ?? []
            guard calls.count <= Self.mostCalls else {
                throw CallError(
                    code: 1, message: "a multicall of \(calls.count) calls; at most \(Self.mostCalls)")
            }
            return .array(
                calls.map { call in
                    let failure: CallError
                    do {
                        return .array([
                            try result(
                                of: call["methodName"]?.string ?? "", call["params"]?.array ?? [],
                                faultKeys: faultKeys, scope: scope)
                        ])
                    } catch let error as CallError {
                        failure = error
                    } catch {
                        failure = CallError(code: 1, message: "\(error)")
                    }
                    return .object([
                        (faultKeys.0, .integer(failure.code)), (faultKeys.1, .string(failure.message)),
                    ])
                })
        case "system.listMethods": return .array(Self.methods.map { .string($0) })
        case "system.listNotifications": return .array(Self.notifications.map { .string($0) })
        default: break
        }
        if let secret {
            guard !scope.refused, let given = params.first?.string, Self.sameSecret(given, "token:\(secret)")
            else {
                scope.refused = true
                throw CallError(code: 1, message: Self.unauthorized)
            }
            params.removeFirst()
        } else if params.first?.string?.hasPrefix("token:") == true {
            params.removeFirst()
        }
        do {
            return try perform(method, Parameters(method: method, values: params))
        } catch let error as DownloadListError {
            throw CallError(code: 1, message: error.description)
        } catch let error as FastpullError {
            throw CallError(code: 1, message: error.message)
        }
    }

    /// Called once the answer to a shutdown is made.
    func shutDown() { onShutdown() }

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
}

/// What one request has shown so far: whether a call of it gave a wrong secret.
final class RefusalScope {
    var refused = false
}

/// A call's parameters (the token taken off), read by position as aria2 reads them.
struct Parameters {
    var method: String
    var values: [JSONValue]

    subscript(index: Int) -> JSONValue? { values.indices.contains(index) ? values[index] : nil }

    /// The GID at `index`, or aria2's error for a call without one.
    func gid(_ index: Int = 0) throws -> String {
        guard let value = self[index]?.string else {
            throw Aria2RPC.CallError(code: 1, message: "\(method) needs a GID")
        }
        return value
    }

    /// The list of keys at `index` (tellStatus, tellActive, …), nil for every key.
    func keys(_ index: Int) -> [String]? { self[index]?.array?.compactMap(\.string) }

    /// aria2's options object at `index`: every value as a string.
    func options(_ index: Int) -> [String: String] {
        guard case .object(let fields) = self[index] else { return [:] }
        var options: [String: String] = [:]
        for (key, value) in fields {
            switch value {
            case .string(let text): options[key] = text
            case .integer(let number): options[key] = String(number)
            case .number(let number): options[key] = String(number)
            case .bool(let flag): options[key] = flag ? "true" : "false"
            // `header` may be given several times: one per line.
            case .array(let values): options[key] = values.compactMap(\.string).joined(separator: "\n")
            default: break
            }
        }
        return options
    }
}
