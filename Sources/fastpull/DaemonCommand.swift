import Fastpull
import FastpullCommandLine
import FastpullEngine
import FastpullManager
import FoundationEssentials
import Glibc

/// `fastpull daemon [OPTIONS]` (also `aria2c --enable-rpc …`, or fastpull started as `aria2c`): the
/// download manager, its list in SQLite, aria2's RPC on `/jsonrpc` (JSON-RPC and WebSocket) and
/// `/rpc` (XML-RPC), its web page on `/`, until a signal or `aria2.shutdown` ends it (every transfer
/// stopped with its journal saved, to resume at the next start).
enum DaemonCommand {
    static let help = """
        usage: fastpull daemon [OPTIONS]   (also: aria2c --enable-rpc [OPTIONS])

        Keeps a list of downloads (SQLite) and runs it, driven by aria2's RPC at
        http://127.0.0.1:PORT/jsonrpc (JSON-RPC, WebSocket) and /rpc (XML-RPC): aria2p, AriaNg,
        webui-aria2 and other aria2 front-ends, or its own web page at http://127.0.0.1:PORT/.

          --list PATH                     The list's file (default: $XDG_DATA_HOME/fastpull/downloads.sqlite;
                                          started as aria2c: beside --save-session, else in --dir)
          -d, --dir DIR                   Where downloads go, and the only folder they may go (default: here)
          --allow-any-dir                 Let a call's dir name any folder (aria2's behaviour)
          --rpc-listen-port N             The RPC port (default: 6800; 0: a free one)
          --rpc-secret-file PATH          Every call must carry token:SECRET, SECRET read from PATH
                                          (also $FASTPULL_RPC_SECRET, or aria2's --rpc-secret). Without
                                          one, fastpull daemon makes one at its first start and keeps it
                                          in rpc-secret beside the list, readable by you only
          --rpc-listen-all                Listen on every interface, not only loopback
          --rpc-allow-origin-all          Answer web pages of any origin (CORS)
          -j, --max-concurrent-downloads N  Downloads at once (default: 5)
          --max-download-limit SPEED      Each download's speed limit when its call sets none (500K, 2M)
          --max-overall-download-limit SPEED  All downloads' speed limit together
          -i, --input-file PATH           Add the downloads of an aria2 input file at the start (once)
          --save-session PATH             Read that aria2 session at the start; write it at the end
          --save-session-interval SEC     …and every SEC seconds
          --conf-path PATH                aria2's configuration file (started as aria2c, ~/.aria2/aria2.conf
                                          is read unless --no-conf); the command line wins
          -q, --quiet                     Print nothing but errors
        aria2's other options are accepted and left alone.
        """

    static func run(_ given: [String], asAria2c: Bool, environment: [String: String]) async -> Never {
        if given.contains("--help") || given.contains("-h") {
            print(help)
            exit(0)
        }
        let options: DaemonOptions
        do {
            options = try DaemonOptions(
                parsing: try withConfiguration(given, asAria2c: asAria2c, environment: environment))
        } catch {
            FastpullCommand.printError(error.message)
            exit(ExitStatus.usage)
        }
        let workingFolder = FileManager.default.currentDirectoryPath
        let listPath = options.listPath(
            asAria2c: asAria2c, workingFolder: workingFolder, environment: environment)
        let listFolder = FileSystem.split(listPath).folder
        try? FileManager.default.createDirectory(atPath: listFolder, withIntermediateDirectories: true)
        var settings = ManagerDaemon.Settings(
            listPath: listPath, directory: options.directory ?? workingFolder)
        // A drop-in saves where the program that started it says, as aria2 does; fastpull daemon only in its folder.
        settings.folder.allowsAnyFolder = options.allowsAnyFolder || asAria2c
        settings.port = options.port
        settings.listensOnAllInterfaces = options.listensOnAllInterfaces
        settings.allowsAnyOrigin = options.allowsAnyOrigin
        settings.maximumActive = options.maximumActive
        settings.sessionPath = options.sessionPath
        settings.sessionInterval = options.sessionInterval
        settings.inputPath = options.inputPath
        settings.downloadLimit = options.downloadLimit
        settings.overallLimit = options.overallLimit
        let secretFile: String?
        do {
            (settings.secret, secretFile) = try secret(
                options, asAria2c: asAria2c, environment: environment, listFolder: listFolder)
        } catch {
            FastpullCommand.printError("error: fastpull daemon: \(error)")
            exit(ExitStatus.usage)
        }
        settings.keptFiles = [secretFile].compactMap { $0 }
        let daemon: ManagerDaemon
        do {
            daemon = try ManagerDaemon(settings)
        } catch {
            FastpullCommand.printError("error: fastpull daemon: \(error)")
            exit(FastpullError.Code.localIO.rawValue)
        }
        let watcher = SignalWatcher { daemon.requestShutdown() }
        for problem in daemon.skippedAtStart { FastpullCommand.printError("warning: not added: \(problem)") }
        if !options.quiet {
            let host = options.listensOnAllInterfaces ? "0.0.0.0" : "127.0.0.1"
            // Written at once (stdout may be a pipe): a front-end that started it reads its port here.
            var lines =
                "fastpull daemon: aria2 JSON-RPC on http://\(host):\(daemon.port)/jsonrpc, list \(listPath)\n"
            lines +=
                "fastpull daemon: web page http://\(host == "0.0.0.0" ? "127.0.0.1" : host):\(daemon.port)/"
            lines += secretFile.map { ", secret in \($0)\n" } ?? "\n"
            if settings.secret == nil {
                lines +=
                    "fastpull daemon: no RPC secret (as aria2 without --rpc-secret): any program on this machine can drive it\n"
            }
            if !options.ignored.isEmpty {
                lines +=
                    "fastpull daemon: left alone: \(options.ignored.map { "--\($0)" }.joined(separator: " "))\n"
            }
            _ = StandardStream.write(lines, to: STDOUT_FILENO)
        }
        await daemon.waitForShutdownRequest()
        await daemon.stop()
        watcher.stop()
        exit(0)
    }

    /// The arguments with aria2's configuration file in front: `--conf-path`'s, or (started as
    /// `aria2c`, without `--no-conf`) `~/.aria2/aria2.conf` when it exists.
    private static func withConfiguration(
        _ arguments: [String], asAria2c: Bool, environment: [String: String]
    )
        throws(UsageError) -> [String]
    {
        // `--conf-path=PATH` or `--conf-path PATH`, the last one given.
        var named: String?
        for (index, argument) in arguments.enumerated() {
            if argument.hasPrefix("--conf-path=") {
                named = String(argument.dropFirst("--conf-path=".count))
            } else if argument == "--conf-path", index + 1 < arguments.count {
                named = arguments[index + 1]
            }
        }
        let path: String
        if let named {
            path = named
        } else if asAria2c, !arguments.contains(where: { $0 == "--no-conf" || $0 == "--no-conf=true" }) {
            path = (environment["HOME"] ?? ".") + "/.aria2/aria2.conf"
            guard FileManager.default.fileExists(atPath: path) else { return arguments }
        } else {
            return arguments
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError(message: "error: cannot read the configuration file \(path)")
        }
        return DaemonOptions.configurationArguments(String(decoding: data, as: UTF8.self)) + arguments
    }

    /// The secret every call must carry, and the file it was read from or kept in. aria2's
    /// `--rpc-secret` (hidden from the process table), then `--rpc-secret-file`, then
    /// `$FASTPULL_RPC_SECRET`; else `fastpull daemon` keeps one in `rpc-secret` beside its list, made
    /// at the first start (0600), while a daemon started as `aria2c` has none, as aria2 has none.
    private static func secret(
        _ options: DaemonOptions, asAria2c: Bool, environment: [String: String], listFolder: String
    ) throws -> (String?, String?) {
        if let given = options.secret { return (given, nil) }
        if let path = options.secretFile { return (try readSecret(path), path) }
        if let given = environment["FASTPULL_RPC_SECRET"], !given.isEmpty { return (given, nil) }
        guard !asAria2c else { return (nil, nil) }
        let path = FileSystem.join(listFolder, "rpc-secret")
        if FileManager.default.fileExists(atPath: path) { return (try readSecret(path), path) }
        var bytes = [UInt8](repeating: 0, count: 24)
        for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255) }
        let made = bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw FastpullError(.localIO, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        guard StandardStream.write(made + "\n", to: fd) else {
            throw FastpullError(.localIO, "cannot write \(path)")
        }
        return (made, path)
    }

    /// The secret in the file at `path` (its first line).
    private static func readSecret(_ path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FastpullError(.usage, "cannot read the RPC secret file \(path)")
        }
        let secret =
            String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init)
            ?? ""
        guard !secret.isEmpty else { throw FastpullError(.usage, "the RPC secret file \(path) is empty") }
        return secret
    }
}
