import FoundationEssentials
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What the terminal on stderr can show: whether it is one, its size (asked again on every call, so a
/// resized window is followed at the next redraw), colour (off with `NO_COLOR` or `TERM=dumb`) and
/// Unicode block characters (with a UTF-8 locale).
enum Terminal {
    /// Whether stderr is a terminal.
    static var isInteractive: Bool { isatty(STDERR_FILENO) == 1 }

    /// The columns of the terminal on `descriptor`, or nil when it is no terminal.
    static func columns(of descriptor: Int32) -> Int? {
        var size = winsize()
        guard isatty(descriptor) == 1, ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else {
            return nil
        }
        return Int(size.ws_col)
    }

    /// Whether the live block can be redrawn in place: stderr is a terminal that moves its cursor
    /// (`TERM=dumb` says it cannot; it then gets the plain lines a log gets).
    static func canRedraw(_ environment: [String: String]) -> Bool {
        isInteractive && environment["TERM"] != "dumb"
    }

    /// The window's columns and rows, or 80 × 24 when the size cannot be read.
    static var size: (columns: Int, rows: Int) {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 {
            return (Int(size.ws_col), max(Int(size.ws_row), 1))
        }
        return (80, 24)
    }

    /// Colour is used unless `NO_COLOR` is set to anything non-empty, or `TERM` is `dumb`.
    static func colorAllowed(_ environment: [String: String]) -> Bool {
        if let value = environment["NO_COLOR"], !value.isEmpty { return false }
        return environment["TERM"] != "dumb"
    }

    /// Whether the locale is UTF-8, so block characters display.
    static func unicodeAllowed(_ environment: [String: String]) -> Bool {
        let locale =
            [environment["LC_ALL"], environment["LC_CTYPE"], environment["LANG"]]
            .compactMap { $0 }.first { !$0.isEmpty } ?? ""
        let lowered = locale.lowercased()
        return lowered.contains("utf-8") || lowered.contains("utf8")
    }
}

/// Everything written to stderr goes through here, so notes and the live progress block never
/// tangle: a note erases the block first, and the next redraw paints it again below.
final class Console: Sendable {
    private struct State {
        /// Lines of the live block on screen (the cursor is at the end of its last one).
        var drawn = 0
        /// Set once stderr refused a write (its reader went away): nothing is written from then on,
        /// and the download goes on.
        var closed = false
    }

    private let state = Mutex(State())
    /// `--log`: the file every note is also written to, with its UTC time.
    private let log: Int32?

    /// A console on stderr; with `log`, an open file descriptor, each note goes there too.
    init(log: Int32? = nil) {
        self.log = log
    }

    /// Prints `fastpull: text` on a line of its own, its control characters escaped: the names and
    /// messages in it may come from a server or a document.
    func note(_ text: String) {
        let text = text.escapedForTerminal
        state.withLock { state in
            var output = Self.erase(state.drawn)
            state.drawn = 0
            output += "fastpull: \(text)\n"
            Self.write(output, state: &state)
            if let log { StandardStream.write("\(Self.utcNow()) \(text)\n", to: log) }
        }
    }

    /// The time now as `2026-12-05T10:03:42Z`.
    static func utcNow() -> String {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }

    /// Replaces the live block with `lines`; each must be narrower than the window.
    func draw(_ lines: [String]) {
        state.withLock { state in
            var output = state.drawn > 0 ? Self.up(state.drawn) : "\r"
            for (index, line) in lines.enumerated() {
                output += line + "\u{1B}[K"
                if index < lines.count - 1 { output += "\n" }
            }
            output += "\u{1B}[J"
            state.drawn = lines.count
            Self.write(output, state: &state)
        }
    }

    /// Erases the live block.
    func clear() {
        state.withLock { state in
            guard state.drawn > 0 else { return }
            Self.write(Self.erase(state.drawn), state: &state)
            state.drawn = 0
        }
    }

    /// Back to the first column of the block's first line.
    private static func up(_ lines: Int) -> String {
        lines > 1 ? "\r\u{1B}[\(lines - 1)A" : "\r"
    }

    private static func erase(_ lines: Int) -> String {
        lines > 0 ? up(lines) + "\u{1B}[J" : ""
    }

    private static func write(_ text: String, state: inout State) {
        guard !state.closed else { return }
        if !StandardStream.write(text, to: STDERR_FILENO) { state.closed = true }
    }
}
