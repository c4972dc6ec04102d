import Fastpull
import FastpullCommandLine
import FastpullEngine
import FastpullManager
import FoundationEssentials
import Glibc

/// `fastpull daemon [OPTIONS]` (also `aria2c --enable-rpc …`, or fastpull started as `aria2c`): the
/// download manager, its list in SQLite, aria2's JSON-RPC on `/jsonrpc`, until a signal or
/// `aria2.shutdown` ends it (every transfer stopped with its journal saved, to resume at the next
/// start).
enum DaemonCommand {
    static let help = """
        usage: fastpull daemon [OPTIONS]   (also: aria2c --enable-rpc [OPTIONS])

        Keeps a list of downloads (SQLite) and runs it, driven by aria2's JSON-RPC at
        http://127.0.0.1:PORT/jsonrpc (aria2p, AriaNg, webui-aria2 and other aria2 front-ends).

          --list PATH                     The list's file (default: $XDG_DATA_HOME/fastpull/downloads.sqlite)
          -d, --dir DIR                   Where downloads go when a call names no dir (default: here)
          --rpc-listen-port N             The RPC port (default: 6800; 0: a free one)
          --rpc-secret SECRET             Every call must carry token:SECRET
          --rpc-listen-all                Listen on every interface, not only loopback
          --rpc-allow-origin-all          Answer web pages of any origin (CORS)
          -j, --max-concurrent-downloads N  Downloads at once (default: 5)
          -q, --quiet                     Print nothing but errors
        aria2's other options are accepted and left alone.
        """

    static func run(_ arguments: [String], environment: [String: String]) async -> Never {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(help)
            exit(0)
        }
        let options: DaemonOptions
        do {
            options = try DaemonOptions(parsing: arguments)
        } catch {
            FastpullCommand.printError(error.message)
            exit(ExitStatus.usage)
        }
        let listPath = options.listPath ?? DaemonOptions.defaultListPath(environment: environment)
        try? FileManager.default.createDirectory(
            atPath: FileSystem.split(listPath).folder, withIntermediateDirectories: true)
        var settings = ManagerDaemon.Settings(
            listPath: listPath, directory: options.directory ?? FileManager.default.currentDirectoryPath)
        settings.port = options.port
        settings.secret = options.secret
        settings.listensOnAllInterfaces = options.listensOnAllInterfaces
        settings.allowsAnyOrigin = options.allowsAnyOrigin
        settings.maximumActive = options.maximumActive
        let daemon: ManagerDaemon
        do {
            daemon = try ManagerDaemon(settings)
        } catch {
            FastpullCommand.printError("error: fastpull daemon: \(error)")
            exit(FastpullError.Code.localIO.rawValue)
        }
        let watcher = SignalWatcher { daemon.requestShutdown() }
        if !options.quiet {
            let host = options.listensOnAllInterfaces ? "0.0.0.0" : "127.0.0.1"
            // Written at once (stdout may be a pipe): a front-end that started it reads its port here.
            var lines =
                "fastpull daemon: aria2 JSON-RPC on http://\(host):\(daemon.port)/jsonrpc, list \(listPath)\n"
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
}
