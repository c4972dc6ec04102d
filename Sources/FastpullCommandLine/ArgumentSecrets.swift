/// Where the passwords are in the command's own arguments, so that the command can overwrite them
/// in its argument memory at startup (as curl does): `/proc/PID/cmdline` and `ps` show that memory
/// to every user of the machine for as long as the download runs.
///
/// The arguments are walked with ``ArgumentParser``'s grammar (``OptionTable`` says which options take
/// a value, `--name=value`, `-uVALUE`, bundled short flags, `--`), and these are found:
/// - the password of `-u`/`--user USER:PASSWORD` (everything after the first colon);
/// - the password of a URL's `user:password@`, in any argument or option value (the URLs to fetch,
///   `--mirror`, `--metalink`, `--checksum-file`), and in `--proxy` also without a scheme
///   (`user:password@proxy:3128`, which it takes as `http://`).
package enum ArgumentSecrets {
    /// A password's bytes in one argument.
    package struct Span: Sendable, Equatable, CustomStringConvertible {
        /// The argument's index (the program name not counted).
        package var argument: Int
        /// UTF-8 offsets of the password in the argument.
        package var bytes: Range<Int>

        /// Creates a span.
        package init(argument: Int, bytes: Range<Int>) {
            self.argument = argument
            self.bytes = bytes
        }

        /// `2:[6..<14]`.
        package var description: String { "\(argument):[\(bytes)]" }
    }

    /// The passwords in `arguments` (without the program name), in argument order. Arguments the
    /// parser would refuse are walked as far as they go: the command then stops with a usage error.
    package static func spans(in arguments: [String]) -> [Span] {
        var spans: [Span] = []
        var index = 0
        var optionsEnded = false
        /// The value of a `spec` found in argument `index` at byte `offset`, or in the next argument.
        func value(of spec: OptionSpec, inlineAt offset: Int?) {
            var at = (argument: index, offset: offset ?? 0)
            if offset == nil {
                index += 1
                guard index < arguments.count else { return }
                at = (index, 0)
            }
            let bytes = Array(arguments[at.argument].utf8)[at.offset...]
            if spec.long == "user" {
                if let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon + 1 < bytes.endIndex {
                    spans.append(Span(argument: at.argument, bytes: (colon + 1)..<bytes.endIndex))
                }
            } else if let range = urlPassword(in: bytes, schemeOptional: spec.long == "proxy") {
                spans.append(Span(argument: at.argument, bytes: range))
            }
        }
        while index < arguments.count {
            let argument = arguments[index]
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                if let range = urlPassword(in: Array(argument.utf8)[...], schemeOptional: false) {
                    spans.append(Span(argument: index, bytes: range))
                }
            } else if argument == "--" {
                optionsEnded = true
            } else if argument.hasPrefix("--") {
                let body = argument.utf8.dropFirst(2)
                let equals = body.firstIndex(of: UInt8(ascii: "="))
                let name = String(decoding: body[..<(equals ?? body.endIndex)], as: UTF8.self)
                if let spec = OptionTable.option(long: name), spec.takesValue {
                    value(
                        of: spec,
                        inlineAt: equals.map {
                            argument.utf8.distance(from: argument.utf8.startIndex, to: $0) + 1
                        })
                }
            } else {
                // Bundled short options: the first that takes a value takes the rest, or the next.
                var offset = 1
                for letter in argument.dropFirst() {
                    offset += String(letter).utf8.count
                    guard let spec = OptionTable.option(short: letter) else { break }
                    if spec.takesValue {
                        value(of: spec, inlineAt: offset < argument.utf8.count ? offset : nil)
                        break
                    }
                }
            }
            index += 1
        }
        return spans
    }

    /// The byte range of the password in `text`'s `scheme://user:password@host…` (or, where the
    /// scheme is optional, `user:password@host…`); nil when it has none.
    static func urlPassword(in text: ArraySlice<UInt8>, schemeOptional: Bool) -> Range<Int>? {
        let separator = Array("://".utf8)
        var start: Int?
        if text.count >= separator.count {
            for position in text.startIndex...(text.endIndex - separator.count)
            where text[position..<(position + separator.count)].elementsEqual(separator) {
                start = position + separator.count
                break
            }
        }
        guard let authorityStart = start ?? (schemeOptional ? text.startIndex : nil) else { return nil }
        let rest = text[authorityStart...]
        let authorityEnd =
            rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? rest.endIndex
        // The last `@` ends the user information (a password may hold an unencoded `@`).
        guard let at = rest[..<authorityEnd].lastIndex(of: UInt8(ascii: "@")),
            let colon = rest[..<at].firstIndex(of: UInt8(ascii: ":")), colon + 1 < at
        else { return nil }
        return (colon + 1)..<at
    }
}
