// fastpull-fixture-server: the FastpullFixtures loopback server as a command, for CLI tests, benchmarks
// and manual experiments. Prints its base URL as the first line of stdout, then serves until SIGTERM or
// SIGINT.
import FastpullFixtures

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

let usage = """
    usage: fastpull-fixture-server [--port P] [--host H] [--tls] [--certificate localhost|wrong-host|expired]
                                   [--files DIR] [--total-rate BPS] [--verbose]

    Serves /gen/<size>, /files/<name>, /redirect/..., /__stats on loopback (see FixtureServer's
    documentation for the query parameters that inject faults). Prints the base URL as the first line of
    stdout, then serves until SIGTERM or SIGINT.

      --port P          port to listen on (default: a free port)
      --host H          IP literal to listen on (default: 127.0.0.1; e.g. ::1)
      --tls             serve HTTPS with Fixtures/certs (clients: --cacert Fixtures/certs/ca.pem)
      --certificate C   which certificate HTTPS presents (default: localhost)
      --files DIR       serve the regular files of DIR under /files/<name>
      --total-rate BPS  limit all connections together to BPS content bytes per second
      --verbose         log one line per request to stderr
      --help            show this help

    """

/// Writes `text` to a file descriptor in one call (no stdio buffering, so nothing waits for a flush).
func emit(_ text: String, to descriptor: Int32) {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let count = bytes.withUnsafeMutableBytes {
            write(descriptor, $0.baseAddress! + offset, $0.count - offset)
        }
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { return }
        offset += count
    }
}

func fail(_ message: String) -> Never {
    emit("fastpull-fixture-server: \(message)\n", to: 2)
    exit(2)
}

/// Turns the command line into a configuration, exiting with a message on bad usage.
func parseArguments(_ commandLine: [String]) -> FixtureServer.Configuration {
    var configuration = FixtureServer.Configuration()
    var arguments = commandLine[...]
    func value(for option: String) -> String {
        guard let value = arguments.popFirst() else { fail("\(option) needs a value") }
        return value
    }
    while let argument = arguments.popFirst() {
        switch argument {
        case "--port":
            let text = value(for: argument)
            guard let port = Int(text), (0...65535).contains(port) else {
                fail("--port: not a port: \(text)")
            }
            configuration.port = port
        case "--host":
            configuration.host = value(for: argument)
        case "--tls":
            configuration.tls = true
        case "--certificate":
            switch value(for: argument) {
            case "localhost": configuration.certificate = .localhost
            case "wrong-host": configuration.certificate = .wrongHost
            case "expired": configuration.certificate = .expired
            case let other: fail("--certificate: expected localhost, wrong-host or expired, not \(other)")
            }
        case "--files":
            configuration.filesDirectory = value(for: argument)
        case "--total-rate":
            let text = value(for: argument)
            guard let rate = Int(text), rate > 0 else { fail("--total-rate: not a positive number: \(text)") }
            configuration.totalRate = rate
        case "--verbose":
            configuration.requestLog = { line in emit(line + "\n", to: 2) }
        case "--help", "-h":
            emit(usage, to: 1)
            exit(0)
        default:
            fail("unknown option \(argument)\n\(usage)")
        }
    }
    return configuration
}

let configuration = parseArguments(Array(CommandLine.arguments.dropFirst()))

// Block the stop signals in every thread (threads inherit the mask), then wait for one synchronously.
var signals = sigset_t()
sigemptyset(&signals)
sigaddset(&signals, SIGTERM)
sigaddset(&signals, SIGINT)
pthread_sigmask(SIG_BLOCK, &signals, nil)

let server: FixtureServer
do {
    server = try FixtureServer(configuration)
} catch {
    fail("\(error)")
}
emit(server.baseURL.absoluteString + "\n", to: 1)

var received: Int32 = 0
while sigwait(&signals, &received) != 0 {}
server.stop()
exit(0)
