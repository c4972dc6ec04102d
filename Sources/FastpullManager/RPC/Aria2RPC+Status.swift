import FastpullEngine

extension Aria2RPC {
    /// What `aria2.tellStatus` says of an item: aria2's keys, numbers as strings, a running one's live
    /// progress; only `keys` when given.
    func status(_ stored: ManagedDownload, keys: [String]?) -> JSONValue {
        var item = stored
        let live = stored.status == .active ? queue.live(stored.gid) : nil
        if let live {
            item.totalLength = live.totalLength ?? item.totalLength
            item.completedLength = live.completedLength
        }
        var fields: [(String, JSONValue)] = [
            ("gid", .string(item.gid)), ("status", .string(item.status.rawValue)),
            ("totalLength", .string(String(item.totalLength))),
            ("completedLength", .string(String(item.completedLength))), ("uploadLength", .string("0")),
            ("downloadSpeed", .string(String(live?.bytesPerSecond ?? 0))), ("uploadSpeed", .string("0")),
            ("connections", .string(String(live?.connections ?? 0))),
            ("numPieces", .string("0")), ("pieceLength", .string("1048576")),
            ("dir", .string(item.directory)), ("files", files(item, live: live)),
        ]
        // A stopped item says how it ended, 0 for a success (aria2's fields).
        if item.status.isStopped {
            fields.append(("errorCode", .string(String(item.errorCode ?? 0))))
            fields.append(("errorMessage", .string(item.errorMessage ?? "")))
        }
        // Why a waiting item waits, when it waits for the network (fastpull's own; aria2 says nothing).
        if item.status == .waiting, let note = queue.waitingForNetwork(item.gid) {
            fields.append(("errorMessage", .string(note)))
        }
        if let keys { fields = fields.filter { keys.contains($0.0) } }
        return .object(fields)
    }

    /// `aria2.getFiles`: the item's one file, with its path, sizes and URIs.
    func files(_ item: ManagedDownload, live: DownloadQueue.Live? = nil) -> JSONValue {
        let path = live?.path ?? item.outputName.map { FileSystem.join(item.directory, $0) } ?? ""
        return .array([
            .object([
                ("index", .string("1")), ("path", .string(path)),
                ("length", .string(String(item.totalLength))),
                ("completedLength", .string(String(item.completedLength))),
                ("selected", .string("true")), ("uris", uris(item)),
            ])
        ])
    }

    /// `aria2.getUris`: the item's URIs, the first one used once the item has started.
    func uris(_ item: ManagedDownload) -> JSONValue {
        let started = item.status == .active || item.status.isStopped
        return .array(
            item.uris.enumerated().map {
                .object([
                    ("uri", .string($0.element)),
                    ("status", .string(started && $0.offset == 0 ? "used" : "waiting")),
                ])
            })
    }
}
