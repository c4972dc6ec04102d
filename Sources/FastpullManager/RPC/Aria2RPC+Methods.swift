import Fastpull
import FastpullEngine
import FoundationEssentials

extension Aria2RPC {
    /// Runs one of aria2's methods (the token taken off).
    func perform(_ method: String, _ params: Parameters) throws -> JSONValue {
        switch method {
        case "aria2.addUri":
            let uris = params[0]?.array?.compactMap(\.string) ?? []
            let position = params[2]?.integer.map { min(max($0, 0), 1_000_000_000) }
            return .string(try add(uris: uris, options: params.options(1), position: position).gid)
        case "aria2.addMetalink":
            let position = params[2]?.integer.map { min(max($0, 0), 1_000_000_000) }
            return .array(try addMetalink(params[0]?.string, options: params.options(1), position: position))
        case "aria2.addTorrent":
            throw CallError(code: 1, message: "BitTorrent is not supported")
        case "aria2.remove", "aria2.forceRemove":
            return .string(try queue.remove(params.gid()).gid)
        case "aria2.pause", "aria2.forcePause":
            return .string(try queue.pause(params.gid()).gid)
        case "aria2.unpause":
            return .string(try queue.unpause(params.gid()).gid)
        case "aria2.pauseAll", "aria2.forcePauseAll":
            for item in try queue.list.downloads([.active, .waiting]) { _ = try? queue.pause(item.gid) }
            return .string("OK")
        case "aria2.unpauseAll":
            for item in try queue.list.downloads([.paused]) { _ = try? queue.unpause(item.gid) }
            return .string("OK")
        case "aria2.tellStatus":
            return status(try item(params.gid()), keys: params.keys(1))
        case "aria2.getUris":
            return uris(try item(params.gid()))
        case "aria2.getFiles":
            return files(try item(params.gid()))
        case "aria2.getServers":
            let item = try item(params.gid())
            guard item.status == .active, let live = queue.live(item.gid) else {
                throw CallError(code: 1, message: "No active download for GID#\(item.gid)")
            }
            let uri = JSONValue.string(item.uris.first ?? "")
            return .array([
                .object([
                    ("index", .string("1")),
                    (
                        "servers",
                        .array([
                            .object([
                                ("uri", uri), ("currentUri", uri),
                                ("downloadSpeed", .string(String(live.bytesPerSecond))),
                            ])
                        ])
                    ),
                ])
            ])
        case "aria2.tellActive":
            return .array(try queue.list.downloads([.active]).map { status($0, keys: params.keys(0)) })
        case "aria2.tellWaiting":
            return .array(try page(of: [.waiting, .paused], params).map { status($0, keys: params.keys(2)) })
        case "aria2.tellStopped":
            return .array(try page(of: nil, params).map { status($0, keys: params.keys(2)) })
        case "aria2.changePosition":
            let how = params[2]?.string.flatMap(DownloadList.PositionAnchor.init(rawValue:))
            guard let how, let offset = params[1]?.integer else {
                throw CallError(
                    code: 1,
                    message: "aria2.changePosition needs a GID, a position and POS_SET, POS_CUR or POS_END")
            }
            // Clamped first: no position is further than the list is long.
            let bounded = Int(min(max(offset, -1_000_000_000), 1_000_000_000))
            return .integer(Int64(try queue.list.changePosition(params.gid(), by: bounded, from: how)))
        case "aria2.changeUri":
            throw CallError(
                code: 1, message: "aria2.changeUri is not supported: remove the download and add it again")
        case "aria2.getOption":
            let item = try item(params.gid())
            // The daemon's defaults that apply to one download, then the item's own.
            let limit = globalOptions.withLock { $0["max-download-limit"] } ?? "0"
            var options = ["max-download-limit": limit].merging(item.options) { $1 }
            options["dir"] = item.directory
            options["out"] = item.outputName
            return Self.object(options)
        case "aria2.changeOption":
            let gid = try params.gid()
            var changes = try Self.checkedOptions(params.options(1))
            let current = try item(gid)
            if changes["dir"] != nil || changes["out"] != nil {
                changes["dir"] = try place(
                    dir: changes["dir"] ?? current.directory, out: changes["out"] ?? current.outputName)
            }
            // Refused now when malformed, so the item never runs without what it asked for.
            _ = try ItemOptions.configuration(current.options.merging(changes) { $1 })
            try queue.changeOptions(gid, changes)
            return .string("OK")
        case "aria2.getGlobalOption":
            return Self.object(globalOptions.withLock { $0 })
        case "aria2.changeGlobalOption":
            let changes = try Self.checkedOptions(params.options(0))
            if let text = changes["max-concurrent-downloads"] {
                guard let count = Int(text), count > 0 else {
                    throw CallError(
                        code: 1, message: "max-concurrent-downloads must be a number above 0, got '\(text)'")
                }
                queue.maximumActive = count
            }
            if let text = changes["max-overall-download-limit"], let rate = Int64(text) {
                queue.overallLimit = rate
            }
            globalOptions.withLock { options in
                for (key, value) in changes where key != "dir" { options[key] = value }
            }
            return .string("OK")
        case "aria2.getGlobalStat":
            return try globalStat()
        case "aria2.removeDownloadResult":
            try queue.list.purge(params.gid())
            return .string("OK")
        case "aria2.purgeDownloadResult":
            for item in try queue.list.downloads([.complete, .error, .removed]) {
                try queue.list.purge(item.gid)
            }
            return .string("OK")
        case "aria2.getVersion":
            return .object([
                ("version", .string("1.36.0")), ("fastpull", .string(fastpullVersion)),
                ("enabledFeatures", .array([.string("HTTPS"), .string("Metalink")])),
            ])
        case "aria2.getSessionInfo":
            return .object([("sessionId", .string(sessionID))])
        case "aria2.saveSession":
            guard let sessionPath else {
                throw CallError(
                    code: 1, message: "Filename is not given: start the daemon with --save-session FILE")
            }
            try SessionFile.write(try queue.list.downloads(), to: sessionPath)
            return .string("OK")
        case "aria2.shutdown", "aria2.forceShutdown":
            shutDown()
            return .string("OK")
        case _ where method.hasPrefix("aria2.") && (method.contains("Torrent") || method.contains("Peers")):
            throw CallError(code: 1, message: "BitTorrent is not supported")
        default:
            // aria2's answer (not JSON-RPC's -32601).
            throw CallError(code: 1, message: "No such method: \(method)")
        }
    }

    /// The item with `gid`, or aria2's error.
    private func item(_ gid: String) throws -> ManagedDownload {
        guard let item = try queue.list.download(gid) else {
            throw CallError(code: 1, message: "GID \(gid) is not found")
        }
        return item
    }

    /// The folder a download with `dir` and `out` goes to, or aria2's error when it is outside the
    /// download folder.
    private func place(dir: String?, out: String?) throws -> String {
        // A name is a relative path of plain components: no `.` or `..` (which the kernel would
        // resolve after a symbolic link, past any check of the text), no control characters.
        if let out, OutputName.sanitizeRelativePath(out) != out {
            throw CallError(
                code: 1,
                message:
                    "out '\(out)' must be a relative file name without '.' or '..' parts, leading dots or control characters"
            )
        }
        do {
            return try folder.directory(dir, out: out)
        } catch {
            throw CallError(code: 1, message: error.description)
        }
    }

    /// Adds a download as `aria2.addUri` does: its options checked first (never added without the check
    /// it asked for), its place confined to the download folder, `gid` and `pause` honoured.
    func add(uris: [String], options given: [String: String], position: Int64?) throws -> ManagedDownload {
        let options = try Self.checkedOptions(given)
        do {
            _ = try ItemOptions.configuration(options)
        } catch {
            throw CallError(code: 1, message: error.message)
        }
        let directory = try place(dir: options["dir"], out: options["out"])
        var kept = options
        for key in ["dir", "out", "gid", "pause"] { kept[key] = nil }
        // The daemon's limit for each download applies to those that set none (aria2's rule).
        if kept["max-download-limit"] == nil,
            let limit = globalOptions.withLock({ $0["max-download-limit"] }), limit != "0"
        {
            kept["max-download-limit"] = limit
        }
        return try queue.add(
            uris: uris, directory: directory, outputName: options["out"], options: kept,
            position: position.map { Int($0) }, gid: options["gid"], paused: options["pause"] == "true")
    }

    /// `aria2.addMetalink`: one download per file of the (base64) document, each with its URLs as
    /// mirrors and its strongest hash as the checksum.
    private func addMetalink(_ encoded: String?, options: [String: String], position: Int64?) throws
        -> [JSONValue]
    {
        guard let encoded, let data = Data(base64Encoded: encoded, options: .ignoreUnknownCharacters) else {
            throw CallError(code: 1, message: "aria2.addMetalink needs a base64-encoded Metalink document")
        }
        let metalink = try Metalink(parsing: data)
        var gids: [JSONValue] = []
        for (index, file) in metalink.files.enumerated() {
            var fileOptions = options
            fileOptions["out"] = file.name
            fileOptions["gid"] = nil
            if let strongest = file.checksums.first { fileOptions["checksum"] = strongest.description }
            let item = try add(
                uris: file.urls.map(\.absoluteString), options: fileOptions,
                position: position.map { $0 + Int64(index) })
            gids.append(.string(item.gid))
        }
        return gids
    }

    private func globalStat() throws -> JSONValue {
        let counts = try queue.list.counts()
        func count(_ statuses: [ItemStatus]) -> JSONValue {
            .string(String(statuses.reduce(0) { $0 + (counts[$1] ?? 0) }))
        }
        let speed = queue.runningGIDs.compactMap { queue.live($0)?.bytesPerSecond }.reduce(0, +)
        return .object([
            ("downloadSpeed", .string(String(speed))), ("uploadSpeed", .string("0")),
            ("numActive", count([.active])),
            ("numWaiting", count([.waiting, .paused])),
            ("numStopped", count([.complete, .error, .removed])),
            ("numStoppedTotal", count([.complete, .error, .removed])),
        ])
    }

    /// The items tellWaiting (`statuses`) or tellStopped (nil) answer for `offset` and `num`: from the
    /// start, or counted from the end and in reverse for a negative offset (aria2's rule). Only that
    /// page is read from the list.
    private func page(of statuses: Set<ItemStatus>?, _ params: Parameters) throws -> [ManagedDownload] {
        let offset = Int(params[0]?.integer ?? 0)
        let count = max(Int(params[1]?.integer ?? 0), 0)
        func read(_ start: Int, _ limit: Int) throws -> [ManagedDownload] {
            guard let statuses else { return try queue.list.stoppedDownloads(offset: start, limit: limit) }
            return try queue.list.downloads(statuses, offset: start, limit: limit)
        }
        guard offset < 0 else { return try read(offset, count) }
        let counts = try queue.list.counts()
        let total = (statuses ?? [.complete, .error, .removed]).reduce(0) { $0 + (counts[$1] ?? 0) }
        // The items from index total + offset backwards, `count` of them.
        let last = total + offset
        guard last >= 0 else { return [] }
        let first = max(last - count + 1, 0)
        return Array(try read(first, last - first + 1).reversed())
    }

    /// The options, checked, with their speeds (`500K`, `2M`) in bytes, as aria2 keeps and answers them. A value
    /// with a control character or a line break other than the one between a list's values (`header`
    /// given several times) is refused: the session file keeps one option a line, and a `\r` in a
    /// `referer` once became a download of its own when the session was read back.
    static func checkedOptions(_ options: [String: String]) throws -> [String: String] {
        for (key, value) in options.sorted(by: { $0.key < $1.key })
        where key.unicodeScalars.contains(where: Self.isControl)
            || value.unicodeScalars.contains(where: { $0 != "\n" && Self.isControl($0) })
        {
            throw CallError(code: 1, message: "the option \(key) holds a control character or a line break")
        }
        var options = options
        for key in ["max-download-limit", "max-overall-download-limit"] {
            guard let text = options[key] else { continue }
            do {
                options[key] = String(try ItemOptions.bytes(text, option: key))
            } catch {
                throw CallError(code: 1, message: error.message)
            }
        }
        return options
    }

    /// A C0 or C1 control character, DEL, or a line or paragraph separator.
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{2028}"
            || scalar == "\u{2029}"
    }

    /// Options as aria2 answers them: an object of strings, sorted by name.
    static func object(_ options: [String: String]) -> JSONValue {
        .object(options.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })
    }
}
