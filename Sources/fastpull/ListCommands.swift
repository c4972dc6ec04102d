import FastpullCommandLine
import FastpullEngine
import FastpullManager
import FoundationEssentials
import Glibc

/// `fastpull add`, `ls`, `pause`, `resume` and `rm`: the running manager's list from the command line,
/// through its RPC (`fastpull daemon` on this machine). A GID may be shortened to any prefix that
/// names one item.
enum ListCommands {
    static let names: Set<String> = ["add", "ls", "pause", "resume", "rm"]

    static let help = """
        usage: fastpull add URL... [-d DIR] [-o NAME] [--checksum ALGO=HEX] [--paused]
               fastpull ls [--watch] [--json]
               fastpull pause|resume|rm GID... | --all

        Drives a running fastpull daemon's list: adds downloads (each URL one item; printed: its GID),
        lists them with their progress (--watch: redrawn every second until Ctrl-C), pauses, resumes
        and removes them. A GID may be shortened to a prefix that names one item.

          --rpc-port N            The daemon's port (default: $FASTPULL_RPC_PORT, else 6800)
          --rpc-secret-file PATH  Its secret (default: $FASTPULL_RPC_SECRET, else rpc-secret beside
                                  the default list, where fastpull daemon keeps it)
        """

    /// Runs `command` with `arguments` and exits.
    static func run(_ command: String, _ arguments: [String], environment: [String: String]) async -> Never {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(help)
            exit(0)
        }
        do {
            var options = try Options(arguments, environment: environment)
            let client = ManagerClient(port: options.port, secret: try options.secret())
            switch command {
            case "add": try await add(options, client)
            case "ls": try await list(options, client)
            default: try await change(command, options, client)
            }
            exit(0)
        } catch let error as UsageError {
            FastpullCommand.printError(error.message)
            exit(ExitStatus.usage)
        } catch let error as ManagerClient.Failure {
            FastpullCommand.printError(error.description)
            if case .noDaemon = error { exit(FastpullError.Code.network.rawValue) }
            exit(FastpullError.Code.internalError.rawValue)
        } catch {
            FastpullCommand.printError("\(error)")
            exit(FastpullError.Code.internalError.rawValue)
        }
    }

    /// The words and options of one of these commands.
    struct Options {
        var words: [String] = []
        var port = 6800
        var secretFile: String?
        var secretFromEnvironment: String?
        var defaultSecretFile: String
        var directory: String?
        var name: String?
        var checksum: String?
        var paused = false
        var all = false
        var watch = false
        var json = false

        init(_ arguments: [String], environment: [String: String]) throws(UsageError) {
            if let text = environment["FASTPULL_RPC_PORT"] {
                guard let number = Int(text), (1...65535).contains(number) else {
                    throw UsageError(
                        message: "error: FASTPULL_RPC_PORT must be a port from 1 to 65535, got '\(text)'")
                }
                port = number
            }
            secretFromEnvironment = environment["FASTPULL_RPC_SECRET"].flatMap { $0.isEmpty ? nil : $0 }
            defaultSecretFile =
                FileSystem.split(DaemonOptions.defaultListPath(environment: environment)).folder
                + "/rpc-secret"
            var index = 0
            func value(_ option: String) throws(UsageError) -> String {
                guard index < arguments.count else {
                    throw UsageError(message: "error: \(option) needs a value")
                }
                index += 1
                return arguments[index - 1]
            }
            while index < arguments.count {
                let argument = arguments[index]
                index += 1
                switch argument {
                case "--rpc-port":
                    let text = try value(argument)
                    guard let number = Int(text), (1...65535).contains(number) else {
                        throw UsageError(
                            message: "error: --rpc-port expects a number in 1-65535, got '\(text)'")
                    }
                    port = number
                case "--rpc-secret-file": secretFile = try value(argument)
                case "-d", "--dir": directory = try value(argument)
                case "-o", "--output": name = try value(argument)
                case "--checksum": checksum = try value(argument)
                case "--paused": paused = true
                case "--all": all = true
                case "--watch": watch = true
                case "--json": json = true
                case _ where argument.hasPrefix("-") && argument.count > 1:
                    throw UsageError(message: "error: unknown option '\(argument)' (see fastpull ls --help)")
                default: words.append(argument)
                }
            }
        }

        /// The secret: from `--rpc-secret-file`, the environment, or the daemon's own file when it
        /// exists and this user can read it.
        mutating func secret() throws(UsageError) -> String? {
            if let secretFile {
                guard let data = FileManager.default.contents(atPath: secretFile) else {
                    throw UsageError(message: "error: cannot read the secret file \(secretFile)")
                }
                return String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(
                    String.init)
            }
            if let secretFromEnvironment { return secretFromEnvironment }
            return FileManager.default.contents(atPath: defaultSecretFile).flatMap {
                String(decoding: $0, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init)
            }
        }
    }

    private static func add(_ options: Options, _ client: ManagerClient) async throws {
        guard !options.words.isEmpty else {
            throw UsageError(message: "error: fastpull add needs at least one URL")
        }
        guard options.name == nil || options.words.count == 1 else {
            throw UsageError(message: "error: -o names one file; give one URL with it")
        }
        var fields: [(String, JSONValue)] = []
        if let directory = options.directory {
            // The daemon resolves a relative folder against its own; the user means theirs.
            let absolute =
                directory.hasPrefix("/")
                ? directory : FileManager.default.currentDirectoryPath + "/" + directory
            fields.append(("dir", .string(absolute)))
        }
        if let name = options.name { fields.append(("out", .string(name))) }
        if let checksum = options.checksum { fields.append(("checksum", .string(checksum))) }
        if options.paused { fields.append(("pause", .string("true"))) }
        for url in options.words {
            let gid = try await client.call("aria2.addUri", [.array([.string(url)]), .object(fields)])
            print(gid.string ?? gid.text)
        }
    }

    /// Every item with `keys`: the active ones, then those waiting, then the history.
    private static func items(_ client: ManagerClient, keys: [String]) async throws -> [JSONValue] {
        let fields = JSONValue.array(keys.map { .string($0) })
        var items: [JSONValue] = []
        for (method, params) in [
            ("aria2.tellActive", [fields]), ("aria2.tellWaiting", [.integer(0), .integer(1 << 30), fields]),
            ("aria2.tellStopped", [.integer(0), .integer(1 << 30), fields]),
        ] as [(String, [JSONValue])] {
            items += try await client.call(method, params).array ?? []
        }
        return items
    }

    private static func change(_ command: String, _ options: Options, _ client: ManagerClient) async throws {
        if options.all {
            guard command != "rm" else {
                throw UsageError(message: "error: fastpull rm takes GIDs, not --all")
            }
            _ = try await client.call(command == "pause" ? "aria2.pauseAll" : "aria2.unpauseAll")
            return
        }
        guard !options.words.isEmpty else {
            throw UsageError(message: "error: fastpull \(command) needs GIDs (or --all)")
        }
        let known = try await items(client, keys: ["gid"]).compactMap { $0["gid"]?.string }
        let method = ["pause": "aria2.pause", "resume": "aria2.unpause", "rm": "aria2.remove"][command]!
        var failed = false
        for word in options.words {
            let matches = known.filter { $0.hasPrefix(word.lowercased()) }
            guard matches.count == 1 else {
                FastpullCommand.printError(
                    matches.isEmpty
                        ? "no download has GID \(word)"
                        : "\(word) names \(matches.count) downloads; give more of the GID")
                failed = true
                continue
            }
            do {
                _ = try await client.call(method, [.string(matches[0])])
                print("\(matches[0]) \(["pause": "paused", "resume": "waiting", "rm": "removed"][command]!)")
            } catch {
                FastpullCommand.printError("\(matches[0]): \(error.description)")
                failed = true
            }
        }
        if failed { throw UsageError(message: "error: not every download could be changed") }
    }

    private static func list(_ options: Options, _ client: ManagerClient) async throws {
        let keys = [
            "gid", "status", "totalLength", "completedLength", "downloadSpeed", "files", "errorMessage",
        ]
        let terminal = isatty(STDOUT_FILENO) == 1
        while true {
            let items = try await items(client, keys: keys)
            var text = options.json ? items.map { $0.text + "\n" }.joined() : table(items)
            if options.watch, terminal { text = "\u{1B}[H\u{1B}[2J" + text }
            StandardStream.write(text, to: STDOUT_FILENO)
            guard options.watch else { return }
            try await Task.sleep(for: .seconds(1))
        }
    }

    /// The list as a table: GID, state, progress, size, speed, file.
    static func table(_ items: [JSONValue]) -> String {
        var lines = ["GID               STATE     DONE    SIZE        SPEED       FILE"]
        for item in items {
            let total = Int64(item["totalLength"]?.string ?? "") ?? 0
            let done = Int64(item["completedLength"]?.string ?? "") ?? 0
            let speed = Int64(item["downloadSpeed"]?.string ?? "") ?? 0
            let status = item["status"]?.string ?? "?"
            let path = item["files"]?.array?.first?["path"]?.string ?? ""
            let name = path.isEmpty ? "(named by the server)" : String(path.split(separator: "/").last ?? "")
            let percent = total > 0 ? "\(done * 100 / total)%" : "-"
            var line = (item["gid"]?.string ?? "").padded(18) + status.padded(10) + percent.padded(8)
            line += (total > 0 ? ByteFormat.size(total) : "-").padded(12)
            line += (status == "active" ? ByteFormat.speed(Double(speed)) : "").padded(12) + name
            if let message = item["errorMessage"]?.string, !message.isEmpty { line += "  (\(message))" }
            lines.append(line)
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension String {
    fileprivate func padded(_ width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
