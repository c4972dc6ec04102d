import FastpullEngine
import FoundationEssentials
import Glibc

/// aria2's session file (its `--input-file` format, which `--save-session` writes): per download a
/// line of its URIs separated by tabs, then its options, one `name=value` per line indented by a
/// space (`gid`, `dir`, `out`, `pause=true` for a paused one, and the rest as given). Lines that start
/// with `#` are comments.
public enum SessionFile {
    /// One download of a session file.
    public struct Entry: Sendable, Equatable {
        /// Its URIs: the first asked for, the rest mirrors.
        public var uris: [String]
        /// Its options, by aria2's names.
        public var options: [String: String]
    }

    /// The entries of a session file's text, in order.
    public static func entries(_ text: String) -> [Entry] {
        var entries: [Entry] = []
        for rawLine in text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline) {
            let line = String(rawLine)
            if line.hasPrefix(" ") || line.hasPrefix("\t") {
                let option = line.drop { $0 == " " || $0 == "\t" }
                guard !entries.isEmpty, let equals = option.firstIndex(of: "=") else { continue }
                let name = String(option[..<equals])
                let value = String(option[option.index(after: equals)...])
                // aria2 repeats `header` lines; they are kept one per line.
                let old = entries[entries.count - 1].options[name]
                entries[entries.count - 1].options[name] =
                    name == "header" && old != nil ? old! + "\n" + value : value
            } else if !line.hasPrefix("#") {
                let uris = line.split(separator: "\t").map(String.init).filter { !$0.isEmpty }
                if !uris.isEmpty { entries.append(Entry(uris: uris, options: [:])) }
            }
        }
        return entries
    }

    /// A GID for an entry that names none, the same for the same entry (its URIs, folder and name):
    /// 64 bits of FNV-1a, in hexadecimal.
    public static func stableGID(_ entry: Entry) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        let key =
            entry.uris.joined(separator: "\t") + "\n" + (entry.options["dir"] ?? "") + "\n"
            + (entry.options["out"] ?? "")
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let text = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - text.count) + text
    }

    /// The session text for `items`: those not finished (waiting, active, paused, failed), in the
    /// list's order; a paused one marked `pause=true`, as aria2 writes it.
    public static func text(_ items: [ManagedDownload]) -> String {
        var text = ""
        for item in items where !(item.status == .complete || item.status == .removed) {
            text += item.uris.joined(separator: "\t") + "\n"
            var options = item.options
            options["gid"] = item.gid
            options["dir"] = item.directory
            options["out"] = item.outputName
            if item.status == .paused { options["pause"] = "true" }
            for (name, value) in options.sorted(by: { $0.key < $1.key }) {
                for line in value.split(separator: "\n", omittingEmptySubsequences: true) {
                    text += " \(name)=\(line)\n"
                }
            }
        }
        return text
    }

    /// Writes the session for `items` to `path` whole or not at all (a temporary file renamed over it).
    public static func write(_ items: [ManagedDownload], to path: String) throws {
        let temporary = path + ".tmp"
        try Data(text(items).utf8).write(to: URL(filePath: temporary))
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw FastpullError(
                .localIO, "cannot save the session to \(path): \(String(cString: strerror(code)))")
        }
    }
}
