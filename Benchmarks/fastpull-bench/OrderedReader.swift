/// A reader that takes the file's bytes only in order, in place of a file the tool writes where it
/// likes: what `curl URL -o /dev/null`, `… -o - | cat` and a named pipe ask of a downloader. The tool
/// must hand over its bytes in order, at the reader's pace, with a bounded buffer.
enum OrderedReader: String, Sendable, Codable {
    /// `-o /dev/null`: nothing is kept (the run cannot be compared with the source).
    case nullDevice = "/dev/null"
    /// `-o -` into a pipe that `cat` copies to the output file.
    case pipe = "a pipe"
    /// `-o FIFO`, a named pipe that `cat` copies to the output file.
    case fifo = "a FIFO"

    /// Whether the run leaves the file at the output path to compare with its source.
    var keepsTheFile: Bool { self != .nullDevice }

    /// `invocation`, whose output argument is `output`, rewritten to hand its bytes to this reader:
    /// the output argument becomes `/dev/null`, `-` or a FIFO next to `output`, and for the pipes
    /// the tool runs under `bash`, whose `cat` writes `output` (the run fails when the tool does).
    func wrap(_ invocation: Invocation, output: String) -> Invocation {
        func replacingOutput(with value: String) -> [String] {
            invocation.arguments.map { $0 == output ? value : $0 }
        }
        switch self {
        case .nullDevice:
            return Invocation(
                executable: invocation.executable, arguments: replacingOutput(with: "/dev/null"),
                environment: invocation.environment)
        case .pipe:
            let script = #"set -o pipefail; out=$1; shift; "$@" | cat > "$out""#
            return Invocation(
                executable: "/bin/bash",
                arguments: ["-c", script, "bash", output, invocation.executable] + replacingOutput(with: "-"),
                environment: invocation.environment)
        case .fifo:
            let fifo = output + ".fifo"
            // A tool that fails before it opens the FIFO leaves `cat` waiting in its open: a writer's
            // open and close lets it end.
            let script = #"""
                fifo=$1; out=$2; shift 2; rm -f "$fifo"; mkfifo "$fifo" || exit 1
                cat "$fifo" > "$out" & reader=$!
                "$@"; status=$?
                if kill -0 "$reader" 2>/dev/null && [ "$status" -ne 0 ]; then : > "$fifo"; fi
                wait "$reader"; rm -f "$fifo"; exit "$status"
                """#
            return Invocation(
                executable: "/bin/bash",
                arguments: ["-c", script, "bash", fifo, output, invocation.executable]
                    + replacingOutput(with: fifo),
                environment: invocation.environment)
        }
    }
}
