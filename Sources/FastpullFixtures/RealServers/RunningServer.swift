/// A real server that ``ServerLauncher`` started: its own folder, its child process and the ports it
/// listens on. Every server type keeps one and stops the server through it.
struct RunningServer: Sendable {
    /// The server's own folder: configuration, logs, standard output and error.
    let folder: String
    /// The server's child process.
    let process: ServerProcess
    /// The ports on 127.0.0.1, in the order the server's configuration names them.
    let ports: [Int]

    /// Stops the server and every process it started, then removes its folder.
    func stop() async {
        await process.stop()
        ServerFolder.remove(folder)
    }
}
