import Fastpull
import FoundationEssentials
import Glibc
import Synchronization

/// The download manager as a service: the persistent list (``DownloadList``), the queue that runs it
/// (``DownloadQueue``) and aria2's JSON-RPC on `POST /jsonrpc` (``Aria2RPC``), so that aria2's
/// front-ends (aria2p, AriaNg, webui-aria2) can drive it.
///
/// It listens on loopback unless told to listen on every interface, and answers a web page of another
/// origin (CORS) only when told to: with neither, no other machine and no web page can drive it.
public final class ManagerDaemon: Sendable {
    /// How it runs.
    public struct Settings: Sendable {
        /// The SQLite file of the list.
        public var listPath: String
        /// Where downloads go when a call names no `dir`, and (unless it allows any) the only folder
        /// they may go.
        public var folder: DownloadFolder
        /// aria2's session file: its downloads added at the start (once), the list written to it at
        /// the end, every ``sessionInterval`` seconds when above 0, and at `aria2.saveSession`.
        public var sessionPath: String? = nil
        /// Seconds between session saves (0: at the end only).
        public var sessionInterval = 0
        /// An aria2 input file whose downloads are added at the start (none twice: an entry whose
        /// `gid` is in the list already is skipped).
        public var inputPath: String? = nil
        /// Each new download's speed limit when its call sets none (aria2's `max-download-limit`).
        public var downloadLimit: String? = nil
        /// All downloads' speed limit together (aria2's `max-overall-download-limit`).
        public var overallLimit: String? = nil
        /// The RPC port (aria2's default 6800; 0 picks a free one).
        public var port: Int = 6800
        /// The secret every call must carry as `token:SECRET` (aria2's `--rpc-secret`).
        public var secret: String? = nil
        /// Listens on every interface, not only loopback (`--rpc-listen-all`).
        public var listensOnAllInterfaces = false
        /// Answers web pages of any origin (`--rpc-allow-origin-all`).
        public var allowsAnyOrigin = false
        /// Downloads at once (`--max-concurrent-downloads`, aria2's default 5).
        public var maximumActive = 5
        /// The daemon's other files (its secret), which no download may write; the
        /// list, its companions and the session file are never written by one either.
        public var keptFiles: [String] = []

        /// Every file of the daemon's own: no download writes one (a server's `Content-Disposition`
        /// of `rpc-secret` once replaced the secret, and an `out` of the list's `-wal` the list).
        var reservedPaths: [String] {
            [listPath, listPath + "-wal", listPath + "-shm", listPath + "-journal", listPath + ".lock"]
                + [sessionPath].compactMap { $0 } + keptFiles
        }

        /// Settings for a list at `listPath`, saving into `directory` and nowhere else.
        public init(listPath: String, directory: String) {
            self.listPath = listPath
            self.folder = DownloadFolder(directory)
        }
    }

    /// The queue it runs.
    public let queue: DownloadQueue
    private let server: RPCHTTPServer
    private let shutdown = ShutdownSignal()
    /// The lock on `<list>.lock`, held until the daemon stops.
    private let lock: Mutex<Int32>
    /// The port the RPC listens on.
    public var port: Int { server.port }
    /// The RPC connections served now.
    var rpcConnections: Int { server.slots.count }
    /// Where the session is saved, when it is.
    private let sessionPath: String?
    private let saver: Task<Void, Never>?
    /// The kernel's news of links, addresses and routes, which wakes the items waiting for the network.
    private let networkWatcher: NetworkWatcher?
    /// The session's or input file's downloads that could not be added at the start, each with why.
    public let skippedAtStart: [String]

    /// Opens the list, resumes what was active when it last stopped, and starts listening.
    public init(_ settings: Settings, client: FastpullClient = FastpullClient()) throws {
        // One daemon per list: a second would resume the same items and fetch them twice.
        lock = Mutex(try Self.lockList(settings.listPath))
        let list = try DownloadList(path: settings.listPath)
        let queue = DownloadQueue(
            list: list, client: client, maximumActive: settings.maximumActive,
            reservedPaths: settings.reservedPaths, folder: settings.folder)
        let shutdown = shutdown
        // A shutdown call is answered first, and the daemon ends once that answer is written.
        let asked = ShutdownSignal()
        let rpc = Aria2RPC(
            queue: queue, secret: settings.secret, folder: settings.folder, sessionPath: settings.sessionPath,
            onShutdown: { asked.request() })
        // The limits given at the start, as changeGlobalOption would set them (a malformed one is refused).
        var limits: [String: String] = [:]
        limits["max-download-limit"] = settings.downloadLimit
        limits["max-overall-download-limit"] = settings.overallLimit
        if !limits.isEmpty {
            let method = "aria2.changeGlobalOption"
            _ = try rpc.perform(method, Parameters(method: method, values: [Aria2RPC.object(limits)]))
        }
        let cors = settings.allowsAnyOrigin
        let loopbackOnly = !settings.listensOnAllInterfaces
        let hub = NotificationHub()
        list.observe { item, event in hub.notify(item.gid, event: event, status: item.status) }
        networkWatcher = NetworkWatcher { queue.networkChanged() }
        // What a crash left active is back in line before the first call can add anything.
        try queue.start()
        // Then the session's and input file's downloads, those not in the list yet.
        var skipped: [String] = []
        for path in [settings.sessionPath, settings.inputPath].compactMap({ $0 }) {
            skipped += try Self.importSession(path, into: rpc, list: list)
        }
        skippedAtStart = skipped
        server = try RPCHTTPServer(
            address: settings.listensOnAllInterfaces ? "0.0.0.0" : "127.0.0.1", port: settings.port
        ) { request in
            Self.respond(
                to: request, rpc: rpc, hub: hub, cors: cors, loopbackOnly: loopbackOnly, asked: asked,
                shutdown: shutdown)
        }
        self.queue = queue
        sessionPath = settings.sessionPath
        if let path = settings.sessionPath, settings.sessionInterval > 0 {
            let interval = settings.sessionInterval
            saver = Task {
                while (try? await Task.sleep(for: .seconds(interval))) != nil {
                    try? SessionFile.write(try list.downloads(), to: path)
                }
            }
        } else {
            saver = nil
        }
    }

    /// Adds the downloads of an aria2 session or input file at `path` (none when it does not exist),
    /// skipping those whose `gid` the list has already: a restart adds nothing twice. Returns those
    /// refused (a folder outside the download folder, a malformed option), each with why.
    private static func importSession(_ path: String, into rpc: Aria2RPC, list: DownloadList) throws
        -> [String]
    {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        var skipped: [String] = []
        for entry in SessionFile.entries(String(decoding: data, as: UTF8.self)) {
            // An entry without a GID (an input file written by hand) gets one made from what it asks
            // for, so a second start finds it in the list instead of adding it again.
            var options = entry.options
            let gid = (options["gid"] ?? SessionFile.stableGID(entry)).lowercased()
            options["gid"] = gid
            do {
                if try list.download(gid) != nil { continue }
                _ = try rpc.add(uris: entry.uris, options: options, position: nil)
            } catch let error as Aria2RPC.CallError {
                skipped.append("\(entry.uris[0]) in \(path): \(error.message)")
            } catch {
                skipped.append("\(entry.uris[0]) in \(path): \(error)")
            }
        }
        return skipped
    }

    /// The answer to one HTTP request: JSON-RPC on `POST /jsonrpc` and over a WebSocket opened on
    /// `GET /jsonrpc`, the web page on `GET /`, a CORS preflight where allowed, 404 otherwise. A
    /// shutdown call ends the daemon once its answer is written.
    ///
    /// Unless any origin is allowed, a request a browser sends for a web page (it carries `Origin`) is
    /// refused with 403, whatever its content type: a page's `no-cors` POST needs no preflight, and
    /// would otherwise add downloads to any folder or shut the daemon down (aria2 #200, #2030). On
    /// loopback, a `Host` other than a loopback name is refused too, which a page that rebinds its
    /// own name to 127.0.0.1 (DNS rebinding) cannot avoid.
    private static func respond(
        to request: RPCHTTPServer.Request, rpc: Aria2RPC, hub: NotificationHub, cors: Bool,
        loopbackOnly: Bool,
        asked: ShutdownSignal, shutdown: ShutdownSignal
    ) -> RPCHTTPServer.Response {
        // The daemon's own page (served at `/`, same origin) may call it; no other page may.
        if !cors, let origin = request.headers["origin"], !isOwnOrigin(origin, host: request.headers["host"])
        {
            return RPCHTTPServer.Response(status: 403, reason: "Forbidden", headers: [], body: [])
        }
        if loopbackOnly, let host = request.headers["host"], !isLoopbackHost(host) {
            return RPCHTTPServer.Response(status: 403, reason: "Forbidden", headers: [], body: [])
        }
        var headers = [("Content-Type", "application/json-rpc")]
        if cors {
            headers += [
                ("Access-Control-Allow-Origin", "*"), ("Access-Control-Allow-Headers", "Content-Type"),
                ("Access-Control-Allow-Methods", "POST, OPTIONS"),
            ]
        }
        let path = request.target.split(separator: "?").first.map(String.init) ?? request.target
        switch (request.method, path) {
        case ("GET", "/"):
            return RPCHTTPServer.Response(
                status: 200, reason: "OK",
                headers: [
                    ("Content-Type", "text/html; charset=utf-8"),
                    (
                        "Content-Security-Policy",
                        "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"
                    ),
                    ("X-Frame-Options", "DENY"),
                ],
                body: Array(WebPage.html.utf8))
        case ("POST", "/jsonrpc"):
            let (body, refused) = rpc.respond(json: request.body)
            let ends: (@Sendable () -> Void)? = asked.isRequested ? { @Sendable in shutdown.request() } : nil
            return RPCHTTPServer.Response(
                status: 200, reason: "OK", headers: headers, body: body,
                delay: refused ? Aria2RPC.refusalDelay : nil, afterwards: ends)
        case ("GET", "/jsonrpc") where request.headers["upgrade"]?.lowercased() == "websocket":
            return webSocket(request, rpc: rpc, hub: hub, asked: asked, shutdown: shutdown)
        case ("POST", "/rpc"):
            let (body, refused) = rpc.respond(xml: request.body)
            let ends: (@Sendable () -> Void)? = asked.isRequested ? { @Sendable in shutdown.request() } : nil
            return RPCHTTPServer.Response(
                status: 200, reason: "OK", headers: [("Content-Type", "text/xml")], body: body,
                delay: refused ? Aria2RPC.refusalDelay : nil, afterwards: ends)
        case ("OPTIONS", "/jsonrpc") where cors:
            return RPCHTTPServer.Response(status: 204, reason: "No Content", headers: headers, body: [])
        default:
            return RPCHTTPServer.Response(status: 404, reason: "Not Found", headers: [], body: [])
        }
    }

    /// The handshake that turns a request into a WebSocket (RFC 6455 §4.2), and the connection served
    /// from then on: each text message a JSON-RPC call or batch, answered on it, and every
    /// notification sent to it.
    private static func webSocket(
        _ request: RPCHTTPServer.Request, rpc: Aria2RPC, hub: NotificationHub, asked: ShutdownSignal,
        shutdown: ShutdownSignal
    ) -> RPCHTTPServer.Response {
        guard request.headers["sec-websocket-version"] == "13" else {
            return RPCHTTPServer.Response(
                status: 426, reason: "Upgrade Required", headers: [("Sec-WebSocket-Version", "13")], body: [])
        }
        guard let key = request.headers["sec-websocket-key"], Data(base64Encoded: key)?.count == 16 else {
            return RPCHTTPServer.Response(status: 400, reason: "Bad Request", headers: [], body: [])
        }
        var response = RPCHTTPServer.Response(
            status: 101, reason: "Switching Protocols",
            headers: [
                ("Upgrade", "websocket"), ("Connection", "Upgrade"),
                ("Sec-WebSocket-Accept", WebSocketFrame.acceptValue(forKey: key)),
            ], body: [])
        response.upgrade = { fd, buffered, heard in
            let connection = WebSocketConnection(fd: fd)
            let ticket = hub.join(connection)
            defer { hub.leave(ticket) }
            connection.run(buffered: buffered, largestMessage: RPCHTTPServer.largestBody, heard: heard) {
                text in
                let (body, refused) = rpc.respond(json: Array(text.utf8))
                if refused { RPCHTTPServer.sleep(Aria2RPC.refusalDelay) }
                connection.send(text: String(decoding: body, as: UTF8.self))
                if asked.isRequested {
                    connection.flush()
                    shutdown.request()
                }
            }
        }
        return response
    }

    /// Whether `origin` is the daemon's own page: `http://` and the request's `Host`, where that
    /// names this machine by its loopback name or by an IP address (the page reached over the
    /// network with `--rpc-listen-all`). A `Host` that is some other DNS name may be a name an attacker
    /// rebound to this address, so its page is not the daemon's.
    static func isOwnOrigin(_ origin: String, host: String?) -> Bool {
        guard let host, isLoopbackHost(host) || isAddressLiteral(host) else { return false }
        return origin.lowercased() == "http://" + host.lowercased()
    }

    /// Whether a `Host` field is an IP address (with or without a port).
    static func isAddressLiteral(_ field: String) -> Bool {
        if field.hasPrefix("["), let end = field.firstIndex(of: "]") {
            var address = in6_addr()
            return inet_pton(AF_INET6, String(field[field.index(after: field.startIndex)..<end]), &address)
                == 1
        }
        var address = in_addr()
        return inet_pton(AF_INET, String(field.split(separator: ":").first ?? ""), &address) == 1
    }

    /// Whether a `Host` field names this machine's loopback (with or without a port).
    static func isLoopbackHost(_ field: String) -> Bool {
        var name = field.lowercased()
        if name.hasPrefix("["), let end = name.firstIndex(of: "]") {
            name = String(name[name.index(after: name.startIndex)..<end])
        } else if let colon = name.lastIndex(of: ":") {
            name = String(name[..<colon])
        }
        return name == "127.0.0.1" || name == "localhost" || name == "::1"
    }

    /// Asks the daemon to end (a signal, or `aria2.shutdown`): ``waitForShutdownRequest()`` returns.
    public func requestShutdown() { shutdown.request() }

    /// Returns once a shutdown is requested.
    public func waitForShutdownRequest() async { await shutdown.wait() }

    /// Why a daemon could not start on a list.
    public struct ListInUse: Error, CustomStringConvertible {
        /// The list's file.
        public let path: String
        /// `another fastpull daemon uses …`.
        public var description: String {
            "another fastpull daemon uses the list \(path); stop it, or give this one another --list"
        }
    }

    /// Takes the lock on `<path>.lock` without waiting; throws ``ListInUse`` when another process holds it.
    private static func lockList(_ path: String) throws -> Int32 {
        let fd = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SQLiteError(code: errno, message: "cannot open \(path).lock") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw ListInUse(path: path)
        }
        return fd
    }

    deinit { releaseList() }

    /// Lets another daemon open the list.
    private func releaseList() {
        lock.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    /// Stops listening and stops every transfer (journals saved); the items that were active resume
    /// first when the daemon starts again.
    public func stop() async {
        server.stop()
        saver?.cancel()
        networkWatcher?.stop()
        await queue.stop()
        if let sessionPath { try? SessionFile.write(try queue.list.downloads(), to: sessionPath) }
        releaseList()
    }
}

/// A one-time request to end, that any number of waiters wait for.
final class ShutdownSignal: Sendable {
    private let state = Mutex<(requested: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func request() {
        let waiters = state.withLock { state in
            state.requested = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    var isRequested: Bool { state.withLock { $0.requested } }

    func wait() async {
        await withCheckedContinuation { continuation in
            let requested = state.withLock { state in
                if !state.requested { state.waiters.append(continuation) }
                return state.requested
            }
            if requested { continuation.resume() }
        }
    }
}
